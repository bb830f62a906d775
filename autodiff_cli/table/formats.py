"""The one enum of formats, of points in and rows out, and the file endings
that name them."""

import enum


class Choice(str, enum.Enum):
    """An enum of command-line words: it prints, formats and hashes as its word,
    so it is also equal to that string (`Format.CSV == 'csv'`)."""

    def __str__(self):
        return self.value

    def __format__(self, spec):
        return format(self.value, spec)

    __hash__ = str.__hash__

    @classmethod
    def words(cls):
        """The members a user may name with --format (all, unless a subclass says)."""
        return list(cls)

    @classmethod
    def parse(cls, text, words=None):
        """The member for a word in any case, as an argparse `type`: a word
        outside `words` (default: words()) is a usage error that lists them."""
        words = cls.words() if words is None else words
        if text.lower() in words:   # CSV as csv: a word's case is no mistake worth an error
            return cls(text.lower())
        import argparse
        raise argparse.ArgumentTypeError(
            f"invalid choice: '{text}' (choose from {', '.join(words)})") from None

    @classmethod
    def parser(cls, words):
        """parse() limited to `words`, for a command that writes only some."""
        return lambda text: cls.parse(text, words)


class Format(Choice):
    TABLE = 'table'     # on a terminal: rich tables
    PLAIN = 'plain'     # tab-separated lines whose first field says what the line holds
    JSON = 'json'
    JSONL = 'jsonl'
    CSV = 'csv'
    TSV = 'tsv'
    PARQUET = 'parquet'  # named by a file's ending only, never by --format

    @classmethod
    def words(cls):
        return [f for f in cls if f is not cls.PARQUET]


# A file's ending, as -o FILE or --points FILE gives it, and the format it names.
ENDINGS = {'.csv': Format.CSV, '.tsv': Format.TSV, '.jsonl': Format.JSONL,
           '.ndjson': Format.JSONL, '.json': Format.JSON, '.parquet': Format.PARQUET,
           '.pq': Format.PARQUET}


def by_ending(path):
    """The format a file's name gives, or None."""
    import os
    return ENDINGS.get(os.path.splitext(path)[1].lower())


def json_number(x):
    """A float for JSON: itself, or 'inf', '-inf', 'nan' as strings; an array, nested lists of them."""
    from ..core.numbers import number
    if type(x) is not float and hasattr(x, 'ndim'):   # NumPy's
        if not x.ndim:
            x = float(x)
        else:   # an array: nested lists
            return [json_number(v) for v in (x.tolist() if x.ndim == 1 else x)]
    return x if x - x == 0 else number(x)   # x - x is nan exactly for inf and nan


STREAMED = 1 << 14    # entries: a larger array's JSON is written a part at a time


def json_array_parts(x, part=1 << 16):
    """The JSON of json_number(x), an array of STREAMED entries or more, in
    parts of about `part` characters (array_parts). The same bytes."""
    import json
    return array_parts(x, lambda v: json.dumps(json_number(v)), part)


def array_parts(x, nonfinite=repr, part=1 << 16):
    """An array's nested lists as text, finite numbers as their repr and the
    others as `nonfinite` writes them, in parts of about `part` characters:
    row by row (a row in pieces), never all its numbers as Python lists nor
    its whole text at once."""
    from math import prod
    rows = x.reshape(-1, x.shape[-1])
    groups = [prod(x.shape[j:-1]) for j in range(x.ndim - 1)]   # rows per bracket, outermost first
    piece = max(1, part // 24)
    out, held = [], 0
    for r in range(len(rows)):
        row = rows[r]
        out.append((', ' if r else '') + '[' * sum(r % g == 0 for g in groups) + '[')
        for start in range(0, len(row), piece):
            numbers = row[start:start + piece].tolist()
            if all(v - v == 0 for v in numbers):
                texts = map(repr, numbers)
            else:
                texts = map(nonfinite, numbers)
            text = (', ' if start else '') + ', '.join(texts)
            out.append(text)
            held += len(text)
            if held >= part:
                yield ''.join(out)
                out, held = [], 0
        out.append(']' + ']' * sum((r + 1) % g == 0 for g in groups))
    yield ''.join(out)
