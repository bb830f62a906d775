"""Output: a result of eval or grad in each format, and the one rich table
builder; numbers through core.numbers, the one formatter pictures use too.

A writer per format turns a Result into text, or into parts of text (plain
--nodes of a large graph); write() puts it on stdout. A refusal (a name
that would repeat a column) comes before any text, so it leaves stdout
empty. Numbers print in shortest round-trip form: float(text) == value.
User text reaches rich only as Text, never as markup.
"""

from functools import partial
from math import copysign
from operator import itemgetter

from ..core.numbers import number
from ..errors import UsageError
from ..table.formats import STREAMED, Format, array_parts, json_array_parts, json_number

# ---- results ----

# Records are plain classes: importing dataclasses (and with it inspect)
# would cost more start-up than the rest of the command line.

class NodeRecord(tuple):
    """One node's row, a tuple with named fields (made in C: there is one per
    node of --nodes): its id (position on the tape), op, name (variable,
    constant or binding, or None), args (its inputs' ids), expr (the source
    text it computes, elided past 120 characters), block (its instance path,
    or None), value, and grad (None where no gradient reaches)."""
    __slots__ = ()
    _fields = ('id', 'op', 'name', 'args', 'expr', 'block', 'value', 'grad')

    def __new__(cls, id, op, name, args, expr, block, value, grad):
        return tuple.__new__(cls, (id, op, name, args, expr, block, value, grad))

    def __repr__(self):
        return f'NodeRecord({", ".join(f"{k}={v!r}" for k, v in zip(self._fields, self))})'


for _k, _field in enumerate(NodeRecord._fields):
    setattr(NodeRecord, _field, property(itemgetter(_k)))


class Result:
    """One point's result: what every writer takes."""
    __slots__ = ('value', 'inputs', 'gradients', 'nodes', 'warnings', 'title', 'diagnosis')

    def __init__(self, value, inputs, gradients=None, nodes=None, warnings=(), title='',
                 diagnosis=None):
        self.value = value
        self.inputs = inputs          # variable name -> the value it had, sorted by name
        self.gradients = gradients    # variable name -> df/dname, in the order asked; None for eval
        self.nodes = nodes            # NodeRows, with --nodes; else None
        self.warnings = list(warnings)
        self.title = title            # the output's source text, for the table
        self.diagnosis = diagnosis    # --explain's findings, for the JSON writers; else None

    def __repr__(self):
        return f'Result({", ".join(f"{k}={getattr(self, k)!r}" for k in self.__slots__)})'


class NodeRows:
    """The rows of --nodes, kept as columns: NodeRecords to read (iterating
    or indexing makes them), and plain tuples in the same field order for a
    writer that formats 10^5 of them (rows()), which building a record per
    node would double."""
    __slots__ = ('columns',)

    def __init__(self, columns):
        self.columns = columns   # one sequence per field of NodeRecord, in its order

    @classmethod
    def of(cls, records):
        records = list(records)
        return cls([list(column) for column in zip(*records)] if records
                   else [[] for _ in NodeRecord._fields])

    def rows(self):
        return zip(*self.columns)

    def __len__(self):
        return len(self.columns[0])

    def __iter__(self):
        make = tuple.__new__
        return (make(NodeRecord, (i, op, name, list(args), expr, block, value, grad))
                for i, op, name, args, expr, block, value, grad in self.rows())

    def __getitem__(self, k):
        if isinstance(k, slice):
            return list(self)[k]
        i, op, name, args, expr, block, value, grad = [column[k] for column in self.columns]
        return NodeRecord(i, op, name, list(args), expr, block, value, grad)

    def __eq__(self, other):   # equal to the list of its records, as when it was one
        if isinstance(other, (NodeRows, list)):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None

    def __repr__(self):
        return f'NodeRows({list(self)!r})'


class _Texts:
    """graph.texts(limit) as a column, made anew at each reading rather than
    held: a text per node of a large graph, each up to `limit` long."""
    __slots__ = ('graph', 'limit')

    def __init__(self, graph, limit):
        self.graph, self.limit = graph, limit

    def __iter__(self):
        return self.graph.each_text(self.limit)

    def __getitem__(self, k):
        return self.graph.text(k, self.limit)

    def __len__(self):
        return len(self.graph.nodes)


def node_records(graph, values, grads=None, text_limit=120, shown=None):
    """The nodes that ran at this point (an `if`'s untaken branch did not), by
    tape id; `grads` shown where `shown` says (default: where one reaches)."""
    from itertools import compress

    from ..core.passes import executed, receives_gradient
    nodes = graph.nodes
    if grads is None:
        grads = [None] * len(nodes)
    else:   # a gradient is shown only where one reaches
        shown = receives_gradient(graph) if shown is None else shown
        grads = [grad if show else None for grad, show in zip(grads, shown)]
    ops, args, names, _, _, blocks = zip(*nodes) if nodes else [()] * 6   # the tape's columns, in C
    columns = [range(len(nodes)), ops, names, args, _Texts(graph, text_limit), blocks, values,
               grads]
    ran = executed(graph, values)
    if all(ran):
        return NodeRows(columns)
    return NodeRows([list(compress(column, ran)) for column in columns])


# ---- one writer per format ----

def plain(result, env):
    if result.gradients is None and result.nodes is None:
        return [*_plain_value(result.value), '\n']
    lines = [('value\t', result.value)]
    lines += [(f'd_{name}\t', g) for name, g in (result.gradients or {}).items()]
    head = [part for label, x in lines for part in (label, *_plain_value(x), '\n')]
    if result.nodes is None:
        return head
    return _node_lines(''.join(head), result.nodes.rows())


def _plain_value(x):
    """number(x) in parts: a large array (a gradient of millions of numbers)
    a part at a time, as json_parts writes it."""
    if getattr(x, 'size', 0) >= STREAMED and x.ndim:
        return array_parts(x)
    return (number(x),)


def _node_lines(head, rows, part=8192):
    """`head`, then a line per node, joined a part at a time: in one piece
    the text of a large graph would be made, and encoded, in fresh memory
    whose every page faults in."""
    from itertools import islice
    yield head
    # The hot loop of --nodes: rows unpacked (a field by name costs more),
    # each distinct number formatted once, a zero (0.0 == -0.0: no dict key)
    # by its sign.
    shown, zeros = _Numbers(), ('0.0', '-0.0')
    while chunk := list(islice(rows, part)):
        yield ''.join([
            f'node\t{i}\t{op}\t{name or "-"}\t{block or "-"}\t'
            f'{shown[value] if value else zeros[copysign(1.0, value) < 0]}\t'
            f'{"-" if grad is None else shown[grad] if grad else zeros[copysign(1.0, grad) < 0]}'
            f'\t{expr}\n'
            for i, op, name, args, expr, block, value, grad in chunk])


class _Numbers(dict):
    """number(x) of each x, each distinct value formatted once: the values of
    a graph repeat (gradients of 1, a chain that converges), and the shortest
    round-trip form costs more than all the rest of a node's line. Zeros and
    NaN are not kept (0.0 == -0.0 would share a key)."""
    __slots__ = ()

    def __missing__(self, x):
        text = number(x)
        if x == x and x != 0:
            self[x] = text
        return text


def json_text(result, env):
    return ''.join(json_parts(result))


def json_parts(result, tail=''):
    """json_text in parts, `tail` (', "key": value') spliced in before its
    end: a large array (a gradient of millions of numbers) is written a part
    at a time (json_array_parts), never held as lists or as one text."""
    import json
    dumps = partial(json.dumps, allow_nan=False, ensure_ascii=False)
    yield '{"value": '
    yield from _json_value(result.value, dumps)
    if result.gradients is not None:
        yield ', "gradient": {'
        for k, (name, g) in enumerate(result.gradients.items()):
            yield (', ' if k else '') + dumps(name) + ': '
            yield from _json_value(g, dumps)
        yield '}'
    if result.nodes is not None:
        yield ', "nodes": ' + dumps([
            {'id': r.id, 'op': r.op, 'name': r.name, 'args': r.args, 'expr': r.expr,
             'block': r.block, 'value': json_number(r.value),
             'grad': None if r.grad is None else json_number(r.grad)} for r in result.nodes])
    if result.diagnosis is not None:
        yield ', "diagnosis": ' + dumps(result.diagnosis)
    yield tail + '}\n'


def _json_value(x, dumps):
    if getattr(x, 'size', 0) >= STREAMED and x.ndim:
        return json_array_parts(x)
    return (dumps(json_number(x)),)


_NODE_COLUMNS = ('id', 'op', 'name', 'block', 'expr', 'value', 'grad')


def _row_table(result, fmt):
    """(header, rows) of a point as a one-row batch: its inputs, the value and
    a d_NAME per gradient; with --nodes, one row per node instead."""
    if result.nodes is not None:
        return list(_NODE_COLUMNS), [[getattr(r, k) for k in _NODE_COLUMNS] for r in result.nodes]
    outputs = ['value'] + [f'd_{name}' for name in result.gradients or ()]
    clash = sorted(set(outputs) & set(result.inputs))
    if clash:
        raise UsageError(f"the variable '{clash[0]}' has the name of an output column, which "
                         f'--format {fmt} would repeat; rename it, or use --format json or plain')
    header = list(result.inputs) + outputs
    return header, [[*result.inputs.values(), result.value, *(result.gradients or {}).values()]]


_DELIMITERS = {Format.CSV: ',', Format.TSV: '\t'}


def delimited(result, env, fmt):
    import csv
    import io
    header, rows = _row_table(result, fmt)
    text = io.StringIO()
    writer = csv.writer(text, delimiter=_DELIMITERS[fmt], lineterminator='\n')
    writer.writerow(header)
    writer.writerows([number(c) if isinstance(c, float) or hasattr(c, 'ndim') else
                      '' if c is None else c for c in row] for row in rows)
    return text.getvalue()


def json_lines(result, env):
    import json
    header, rows = _row_table(result, Format.JSONL)
    extra = {} if result.diagnosis is None else {'diagnosis': result.diagnosis}
    return ''.join(json.dumps({**dict(zip(header, [json_number(c) if isinstance(c, float)
                                                   or hasattr(c, 'ndim') else c for c in row])),
                               **extra},
                              allow_nan=False, ensure_ascii=False, separators=(',', ':')) + '\n'
                   for row in rows)


def table_text(result, env):
    from ..table.rich_tables import rich_text, table   # only on a terminal
    d = env.partial
    summary = table([('', 'left', 'bold'), ('', 'right', None)],
                    [['f', result.title], ['value', number(result.value)]]
                    + [[f'{d}f/{d}{name}', number(g)] for name, g in (result.gradients or {}).items()],
                    show_header=False, box=None, padding=(0, 2))
    shown = [summary]
    if result.nodes is not None:
        shown.append(node_table(result, env, d))
    return rich_text(shown, env.stdout, colour=env.colour)


def node_table(result, env, d):
    """The nodes as a table. Numbers are never cut; on a terminal too narrow
    for them at full precision and a readable expression column, they are
    shown to 7 significant digits (plain and json keep every digit)."""
    from ..table.rich_tables import table
    import shutil
    has_grad = result.gradients is not None
    has_block = any(r.block for r in result.nodes)

    def rows(show):
        return [[str(r.id), r.op, r.name or ''] + ([r.block or ''] if has_block else [])
                + [r.expr, show(r.value)]
                + (['-' if r.grad is None else show(r.grad)] if has_grad else [])
                for r in result.nodes]

    columns = ([('id', 'right', None), ('op', 'left', None), ('name', 'left', None)]
               + ([('block', 'left', None)] if has_block else [])
               + [('expression', 'left', None), ('value', 'right', None)]
               + ([(f'{d}f/{d}node', 'right', None)] if has_grad else []))
    expression = columns.index(('expression', 'left', None))
    width = shutil.get_terminal_size().columns
    full = rows(number)
    # Each column costs its widest cell plus 3 for borders and padding.
    needed = sum(max([len(columns[k][0])] + [len(row[k]) for row in full]) + 3
                 for k in range(len(columns)) if k != expression) + 24
    shown = full if needed <= width else rows(lambda x: number(x, 7))
    return table(columns, shown, title='nodes in tape order')


WRITERS = {
    Format.TABLE: table_text,
    Format.PLAIN: plain,
    Format.JSON: lambda result, env: json_parts(result),
    Format.JSONL: json_lines,
    Format.CSV: lambda result, env: delimited(result, env, Format.CSV),
    Format.TSV: lambda result, env: delimited(result, env, Format.TSV),
}


def write(result, fmt, env):
    text = WRITERS[Format(fmt)](result, env)
    for part in (text,) if isinstance(text, str) else text:
        env.stdout.write(part)
