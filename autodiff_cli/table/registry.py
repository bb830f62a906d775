"""The one registry of writers: for each Format, how its rows are written."""

from .formats import Format
from .json_columns import JsonArray, JsonLines
from .writers import ParquetRows, TableRows, TextRows


class Kind:
    """A format's writer: `make(fmt, source, outputs, file)` makes it; `binary`
    if it writes bytes (else text, to a terminal); `own_keys` if it writes
    each JSON object's own keys (no header needed); `in_parts` if a file of
    it can be one part of many (--engine dask)."""

    def __init__(self, make, binary=True, own_keys=False, in_parts=True):
        self.make, self.binary, self.own_keys, self.in_parts = make, binary, own_keys, in_parts


WRITERS = {
    Format.TABLE: Kind(TableRows, binary=False, in_parts=False),
    Format.PLAIN: Kind(TextRows, in_parts=False),
    Format.CSV: Kind(TextRows),
    Format.TSV: Kind(TextRows),
    Format.JSONL: Kind(JsonLines, own_keys=True),
    Format.JSON: Kind(JsonArray, own_keys=True, in_parts=False),
    Format.PARQUET: Kind(ParquetRows),
}
