"""The one rich table builder, and rich's text of what it builds."""


def table(columns, rows, title=None, **options):
    """A rich Table. `columns` are (header, justify, style); every cell and the
    title are plain text, whatever brackets they hold: rich never reads them as markup."""
    # rich is slow to import: only pay for it when a table is shown.
    from rich.table import Table
    from rich.text import Text
    made = Table(title=None if title is None else Text(title), **options)
    rows = [list(row) for row in rows]
    for k, (header, justify, style) in enumerate(columns):
        if justify == 'right':
            # Numbers are never cut or folded (0.00039… is no number): a
            # right-aligned column is as wide as its widest cell, and the
            # text columns give way on a narrow terminal.
            widest = max([len(header)] + [len(row[k]) for row in rows])
            made.add_column(Text(header), justify=justify, style=style, no_wrap=True,
                            min_width=widest)
        else:
            made.add_column(Text(header), justify=justify, style=style, overflow='fold')
    for row in rows:
        made.add_row(*[Text(cell) for cell in row])
    made.cells = ([header for header, _, _ in columns], rows)   # for _as_records
    return made


def _as_records(made):
    """A table too wide for the terminal, one record per row, as `psql -x`
    shows one: a rule naming the row's first cell, then each other column's
    header and cell on a line. Numbers keep every digit; long text folds."""
    from rich.console import Group
    from rich.rule import Rule
    from rich.table import Table
    from rich.text import Text
    headers, rows = made.cells
    parts = [made.title] if made.title is not None else []
    if not made.show_header:     # a list of name and value: the value below its name
        from rich.padding import Padding
        for row in rows:
            parts += [Text(row[0], style='bold', overflow='fold'),
                      Padding(Text('  '.join(row[1:]), overflow='fold'), (0, 0, 0, 2))]
        return Group(*parts)
    for row in rows:
        record = Table(show_header=False, box=None, padding=(0, 1, 0, 0))
        record.add_column(style='bold', no_wrap=True)
        record.add_column(overflow='fold')
        for header, cell in zip(headers[1:], row[1:]):
            record.add_row(Text(header), Text(cell))
        parts += [Rule(Text(f'{headers[0]} {row[0]}'.strip()), align='left', characters='─'),
                  record]
    if made.caption is not None:
        parts.append(Text(made.caption))
    return Group(*parts)


def rich_text(renderables, stream, colour=False, width=None):
    """What rich would show on `stream` (its width, its encoding's box characters,
    colour if asked), as text. The caller writes it, so a closed pipe or a full
    disk fails in the caller's write, not inside rich."""
    from rich.console import Console
    console = Console(file=stream, width=width, force_terminal=colour or None,
                      no_color=not colour, highlight=False, markup=False, emoji=False)
    with console.capture() as captured:
        for renderable in renderables:
            if getattr(renderable, 'cells', None) and _too_wide(console, renderable):
                renderable = _as_records(renderable)
            console.print(renderable)
    return captured.get()


def _too_wide(console, made):
    from rich.measure import Measurement
    # measured as if the terminal were unbounded: rich clamps to its width
    return Measurement.get(console, console.options.update_width(1 << 20), made).minimum \
        > console.width
