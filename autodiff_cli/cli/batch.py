"""A batch of points: every row of a points file through the array algebra,
then the rows out in order."""

import time

from ..core.batch import run_batch
from ..errors import UsageError
from .common import Exit, input_values, numerical, read_text, where


def run_points(args, graph, bindings, names, out, warn):
    """Every row of a points file at once (batch.py), then the rows out in order."""
    from .points import columns, read_points
    from .rows import write_rows

    if args.nodes:
        raise UsageError('--nodes shows one point; it does not go with --points')
    name = args.points if args.points != '-' else '<stdin>'
    points = read_points(read_text(args.points), name)
    fills = input_values(graph, bindings, warn)
    given = columns(points, graph.inputs, fills)
    unbound = [n for n in graph.inputs if n not in given and n not in fills]
    if unbound:
        raise UsageError(f"no value for '{unbound[0]}': the points have no such column; "
                         f'give it as {unbound[0]}=VALUE')
    outputs = ['value'] + [f'd_{n}' for n in names]
    clash = set(outputs) & set(points.header)
    if clash:
        raise UsageError(f"the points already have a column '{sorted(clash)[0]}', "
                         'which the output would repeat')
    count = len(points)
    value, gradient, bad = run_batch(graph, {**fills, **given}, count, names)
    if bad is not None:
        node, rows_hit = bad
        numerical(f'{where(graph, node)} is not finite in {rows_hit} of {count} rows, '
                   'the first node where that happens', args.strict, warn)
    fmt = args.format if args.format_given else points.kind
    same_text = fmt == points.kind or (fmt == 'plain' and points.kind == 'tsv')
    echo = points.lines if same_text and points.kind != 'jsonl' else None
    with _progress(count, warn.stream) as advance:
        write_rows(fmt, points.header + outputs, points.rows() if echo is None else None,
                   [value, *gradient.values()], out, advance, echo, points.kind != 'jsonl')
    return Exit.OK


class _progress:
    """A rich progress bar on a terminal's stderr, once a batch has run a second."""

    def __init__(self, total, stream):
        self.total, self.stream, self.bar, self.done = total, stream, None, 0

    def __enter__(self):
        self.started = time.monotonic()
        return self.advance

    def advance(self, n):
        self.done += n
        if self.bar is None and self.stream.isatty() and time.monotonic() - self.started > 1:
            from rich.progress import Progress
            self.bar = Progress(console=_console(self.stream), transient=True)
            self.bar.start()
            self.task = self.bar.add_task('rows', total=self.total)
        if self.bar is not None:
            self.bar.update(self.task, completed=self.done)

    def __exit__(self, *exc):
        if self.bar is not None:
            self.bar.stop()


def _console(stream):
    from rich.console import Console
    return Console(file=stream)
