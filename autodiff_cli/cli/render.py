"""`adgrad render`: draw the graph to a file, step frames to a folder, or a table.

The library (render.py, steps.py) builds the pictures; this module decides
what to draw from the command line, runs Graphviz's `dot`, and writes files.
Every byte is produced before the first file is touched, and each file is
written to a temporary name beside it and renamed into place, so a failed
render leaves no partial file and never damages an existing one.
"""

import argparse
import io
import math
import os
import re
import shutil
import stat

from ..errors import AdgradError, UsageError
from ..pictures import dot as _dot
from ..pictures.dot import FIT_NODES, PNG_DPI, TALLEST
from .common import Exit, input_values, load, report_nonfinite, where
from ..table.files import Output, cannot as _cannot

FORMATS = ('svg', 'png', 'pdf', 'dot', 'text', 'html')
EXTENSIONS = {'.svg': 'svg', '.png': 'png', '.pdf': 'pdf', '.dot': 'dot', '.gv': 'dot',
              '.txt': 'text', '.html': 'html', '.htm': 'html'}
LAYOUT_FORMATS = ('svg', 'png', 'pdf')   # the ones that run dot
# dot takes ~0.1 s at 1,000 nodes, ~0.5 s at 3,000 and 4-7 s at 10,000; past
# a couple of thousand nodes a picture is unreadable anyway.
MAX_NODES = 2000
# Long edges cost dot as much as nodes (render.layout_size): a graph may lay
# out this many times --max-nodes in all, about 5 s of dot at the default.
SPREAD = 5
# A step series lays the graph out once per node, so its cost grows with the
# square of the size; past this many nodes it is too long to read anyway.
MAX_STEP_NODES = 60
# A backstop, should the estimate be wrong: dot is stopped after this long,
# scaled up with a raised --max-nodes.
DOT_SECONDS = _dot.DOT_SECONDS
FRAME_FILE = re.compile(r'step-\d{3,}\.(svg|png|pdf)')

INSTALL_GRAPHVIZ = _dot.INSTALL + ', or use --format dot or --format text, which need no dot'


# ---- what to draw ----

def add_picture_options(parser):
    """The options for what a picture shows and how it is dressed (render_command
    declares the rest)."""
    parser.add_argument('--collapse', choices=('blocks',), default=None,
                        help='draw each call of a block as one node, y = h(x), with its '
                             'value, gradient and local derivatives')
    parser.add_argument('--color', choices=('plain', 'magnitude'), default='plain',
                        help='magnitude: colour nodes and edges by log10 |gradient|; '
                             'vanishing, exploding, inf/nan and blocked gradients stand out')
    parser.add_argument('--products', action='store_true',
                        help='label each gradient edge with its chain-rule product, 4 · 3 = 12')
    parser.add_argument('--step', type=_whole, metavar='N', default=None,
                        help='write step N of the pass alone, one frame, to -o (for a slide)')
    parser.add_argument('--forward-steps', action='store_true',
                        help='--steps and --step tell the forward pass, one value at a time')
    parser.add_argument('--no-legend', dest='legend', action='store_false',
                        help='leave out the legend')
    parser.add_argument('--font-scale', type=_scale, metavar='X', default=1.0,
                        help='multiply every font size by X (default 1: 12 pt)')
    parser.add_argument('--size', type=_inches, metavar='W,H', default=None,
                        help='shrink the picture to fit W x H inches, as Graphviz does')
    parser.set_defaults(legend=True)


def _whole(text):
    if not (text.isascii() and text.isdigit()) or not 1 <= int(text) <= 10_000_000:
        raise argparse.ArgumentTypeError(f"'{text}' is not a step number (1, 2, ...)")
    return int(text)


def _scale(text):
    try:
        value = float(text)
    except ValueError:
        value = float('nan')
    if not 0.25 <= value <= 8:
        raise argparse.ArgumentTypeError(f"'{text}' is not a font scale from 0.25 to 8")
    return value


def _inches(text):
    parts = text.split(',')
    try:
        numbers = [float(p) for p in parts]
    except ValueError:
        numbers = []
    if len(numbers) != 2 or not all(0.5 <= n <= 1000 for n in numbers):
        raise argparse.ArgumentTypeError(
            f"'{text}' is not a size: give W,H in inches, such as 13.3,7.5")
    return f'{numbers[0]:g},{numbers[1]:g}'


def _look(args):
    from ..pictures.style import Look
    return Look(color=getattr(args, 'color', 'plain'), legend=getattr(args, 'legend', True),
                font_scale=getattr(args, 'font_scale', 1.0), size=getattr(args, 'size', None),
                products=getattr(args, 'products', False))


def run_render(args, env):
    out, warn = env.stdout, env.warn
    fmt, path = _destination(args, out)
    graph, bindings = load(args, env)
    if getattr(args, 'data', None) is not None:
        from .evaluate import bind_data, check_sources
        args.points = None
        check_sources(args)
        # no gradient on the data's columns, as grad prints none for them
        graph = graph._replace(held=tuple(bind_data(args.data, graph, bindings, env)))
    values_in = input_values(graph, bindings, warn)
    if getattr(args, 'unroll', False):
        graph, values_in = _unrolled(graph, values_in)
    missing = [name for name in graph.inputs if name not in values_in]
    mode = args.mode
    stepping = args.steps is not None or getattr(args, 'step', None) is not None
    forward_steps = getattr(args, 'forward_steps', False)
    collapse = getattr(args, 'collapse', None)
    if forward_steps and not stepping:
        raise UsageError('--forward-steps needs --steps DIR or --step N')
    if stepping and mode == 'forward' and not forward_steps:
        raise UsageError('--steps and --step draw the backward pass; for the forward pass '
                         'give --forward-steps instead of --pass forward')
    if stepping and collapse:
        raise UsageError('--collapse draws a whole call as one node, and the steps go node by '
                         'node inside it: use one or the other')
    if fmt == 'text' and getattr(args, 'step', None) is not None:
        raise UsageError('--step draws one frame as a picture; --format text already lists '
                         'every step')
    if fmt == 'html' and (stepping or collapse):
        raise UsageError('--format html is the interactive page: it takes neither --steps, '
                         '--step nor --collapse')
    if mode is None:
        mode = 'structure' if missing and not stepping and fmt != 'html' else 'backward'
        if mode == 'structure' and len(missing) < len(graph.inputs):
            warn(f"no value for '{missing[0]}': drawing the structure only "
                 f'(give every variable a value to see values and gradients)')
    values = grads = None
    if mode != 'structure':
        values, grads = _passes(graph, values_in, mode == 'backward', warn)
    look = _look(args)
    plan = _memory_plan(args, graph, values, values_in, mode, fmt, collapse)

    # Lay out and render everything in memory first; write only at the end.
    outputs = []
    frame_format = fmt if args.steps is not None and fmt in LAYOUT_FORMATS and (
        path is None or args.format_given) else 'svg'
    if path is not None:
        if fmt == 'text':
            _check_size(graph, args.max_nodes or MAX_NODES, '--format text', spread=None)
            data = _text(graph, values, grads, mode, path == '-' and out.isatty(), plan)
        elif fmt == 'html':
            from ..pictures.page import interactive_page
            _check_size(graph, args.max_nodes or MAX_NODES, '--format html')
            data = interactive_page(graph, values_in, look=look, rankdir=args.rankdir or 'LR',
                                    layout=lambda digraph: _layout(digraph, 'svg',
                                                                   args.max_nodes))
        elif getattr(args, 'step', None) is not None:
            _check_size(graph, args.max_nodes or MAX_NODES, '--step')
            data = _one_step(graph, values, grads, args, look, fmt, warn, plan)
        else:
            data = _picture(graph, values, grads, mode, args, look, fmt, collapse, warn, plan)
        outputs.append((path, data))
    frames = {}
    if args.steps is not None:
        _check_size(graph, args.max_nodes or MAX_STEP_NODES, '--steps')
        frames = _step_files(graph, values, grads, args, look, frame_format, plan)
    check_targets(path, args.steps, list(frames))
    for target, data in outputs:
        if target == '-':
            _to_stdout(data, out)
        else:
            write_atomic(target, data)
    if frames:
        write_folder(args.steps, frames)
    return Exit.OK


def _unrolled(graph, values_in):
    """--unroll: the array program as its graph of numbers (pictures/unroll.py)."""
    from ..pictures.unroll import unroll
    return unroll(graph, values_in)


def _passes(graph, values_in, backward_too, warn):
    """(values, gradients or None) at the point: over numbers, or over arrays
    for an array program, whose output must then be a single number."""
    from ..core import tensors
    from ..core.graph import is_array_program
    from ..core.passes import backward, forward
    if not is_array_program(graph, values_in):
        values = forward(graph, values_in)   # names the missing variable, with a caret
        report_nonfinite(graph, values, False, warn)   # drawn as is; worth a word
        return values, backward(graph, values) if backward_too else None
    values = tensors.evaluate(graph, values_in)
    bad = tensors.first_nonfinite(values)
    if bad is not None:
        warn(f'{where(graph, bad)} is not finite, the first non-finite value')
    if not backward_too:
        return values, None
    shape = tensors.shape_of(values[graph.output])
    if shape:
        raise UsageError(f'the output has shape {tensors.shown(shape)}: a gradient needs a '
                         'single number, so take sum(...) or mean(...) of it, or draw the '
                         'values alone with --pass forward')
    return values, tensors.gradients(graph, values)


def _memory_plan(args, graph, values, values_in, mode, fmt, collapse):
    """render --memory or --checkpoint: what the pass keeps (checkpoint.plan),
    or None; refused where there is nothing to mark it on."""
    memory, text = getattr(args, 'memory', False), getattr(args, 'checkpoint', None)
    if not memory and text is None:
        return None
    from ..core import checkpoint
    from ..core.graph import is_array_program
    if memory and text is not None:
        raise UsageError('--memory draws what the plain pass keeps, --checkpoint what a '
                         'checkpointed one keeps: give one of them')
    if fmt == 'html':
        raise UsageError('--memory and --checkpoint mark a picture or a table: svg, png, pdf, '
                         'dot or text, not html')
    if mode != 'backward':
        raise UsageError('--memory and --checkpoint draw the backward pass: give every '
                         'variable a value, and leave out --pass forward')
    pol = checkpoint.PLAIN
    if text == 'auto':
        raise UsageError('render --checkpoint draws sqrt or every:K; auto chooses by '
                         'the memory a run has, which a picture has not')
    if text is not None:
        try:
            pol = checkpoint.policy(text)
        except AdgradError as error:
            raise UsageError(error.message) from None
    if is_array_program(graph, values_in):
        from ..core import tensors
        algebra = tensors.algebra()
    else:
        from ..core.primitives import NUMBERS
        algebra = NUMBERS
    return checkpoint.plan(graph, values, algebra, pol)


def _picture(graph, values, grads, mode, args, look, fmt, collapse, warn, plan=None):
    """The bytes of the whole picture in `fmt`, refused if no viewer could show it."""
    from ..pictures.render import drawing, styled
    from ..pictures.style import LARGE
    size = 0
    limit = args.max_nodes or MAX_NODES
    if fmt in LAYOUT_FORMATS and len(graph.nodes) > FOLDS * limit:   # too large to walk
        _check_size(graph, limit, f'--format {fmt}')
    # Drawn once (collapsed, folded, coloured: a walk of the whole tape), then
    # styled for each layout dot.fitted tries, which change only the style.
    drawn = drawing(graph, values, grads if mode == 'backward' else None, collapse, look,
                    plan=plan)
    if fmt in LAYOUT_FORMATS:
        # What is drawn, after --collapse and folding long chains, is what
        # dot lays out: the limit is on that.
        size = _check_size(graph, limit, f'--format {fmt}', scene=drawn)

    def draw(rankdir, look):
        return styled(drawn, mode, rankdir, None, look)
    if fmt in LAYOUT_FORMATS and look.size is None and size <= FIT_NODES:
        picture = _dot.fitted(draw, look, args.rankdir, compact=not drawn.blocks)
    else:
        picture = draw(args.rankdir or 'LR', look)
    if fmt == 'png' and size <= LARGE:
        # Crisp on slides and high-density screens; a large graph's
        # bitmap is big enough already.
        picture.digraph.attr(dpi=PNG_DPI)
    data = _layout(picture.digraph, fmt, args.max_nodes)
    _check_viewable(data, fmt, size <= LARGE, has_blocks=any(n.block for n in graph.nodes)
                    and not collapse, warn=warn, turned=args.rankdir == 'TB')
    return data


FOLDS = 20        # a graph this many times --max-nodes is refused before it is drawn


def _check_viewable(data, fmt, crisp=True, has_blocks=False, warn=None, turned=False):
    """Refuse a picture no viewer can show; say how to make a too-wide one fit a slide."""
    from ..pictures.layout import picture_size, unviewable
    from ..pictures.style import SLIDE_HEIGHT, SLIDE_WIDTH
    dpi = int(PNG_DPI) if fmt == 'png' and crisp else 96 if fmt != 'png' else 72
    size = picture_size(data, fmt, dpi)
    why = unviewable(size, dpi)
    if why is not None:
        hint = '--collapse blocks to draw each block call as one node, ' if has_blocks else ''
        hint += '' if turned else '--rankdir TB, '   # not again, if it was top to bottom
        raise UsageError(f'{why}. Try {hint}a smaller graph, or --format dot '
                         'to lay it out yourself')
    if warn is not None and size is not None and has_blocks and size[0] > SLIDE_WIDTH:
        warn(f'the picture is {size[0]:.0f} inches wide, wider than a slide: '
             '--collapse blocks draws each block call as one node')
    elif warn is not None and size is not None and has_blocks and \
            size[1] > TALLEST * SLIDE_HEIGHT:
        warn(f'the picture is {size[1]:.0f} inches tall, {math.ceil(size[1] / SLIDE_HEIGHT)} '
             'slides: '
             '--collapse blocks draws each block call as one node')


def _one_step(graph, values, grads, args, look, fmt, warn, plan=None):
    """Step N of the pass as one picture, caption included (for a slide)."""
    from ..pictures.steps import step_pictures
    pictures = step_pictures(graph, values, grads, rankdir=args.rankdir or 'LR', look=look,
                             forward=args.forward_steps,
                             fit=_dot.frame_fit(graph, look, args.rankdir), plan=plan)
    if not pictures:
        raise UsageError(_NO_STEPS)
    if args.step > len(pictures):
        raise UsageError(f'--step {args.step}: the pass has {len(pictures)} step'
                         f'{"s" if len(pictures) != 1 else ""}')
    digraph = pictures[args.step - 1][1].digraph
    if fmt == 'png':
        digraph.attr(dpi=PNG_DPI)
    data = _layout(digraph, fmt, args.max_nodes)
    if fmt in LAYOUT_FORMATS:
        _check_viewable(data, fmt)
    return data


_NO_STEPS = ('the output depends on no variable, so no gradient flows back and '
             '--steps has nothing to show; draw it without --steps')


def _destination(args, out):
    """(format, where): where is a path, '-' for stdout, or None for no picture
    (--steps alone). The format is --format's, else the file's extension's, else SVG."""
    # main() fills in eval's and grad's default format; render's comes from the file.
    path, fmt = args.output, (args.format if args.format_given else None)
    if fmt is None and path not in (None, '-'):
        extension = os.path.splitext(path)[1].lower()
        if extension:
            fmt = EXTENSIONS.get(extension)
            if fmt is None:
                known = ' '.join(sorted(EXTENSIONS))
                raise UsageError(f"cannot tell the format from '{extension}': name the file "
                                 f'with one of {known}, or give --format')
    if path is None and args.steps is not None and (fmt is None or fmt in LAYOUT_FORMATS):
        return fmt or 'svg', None   # --steps DIR --format png: the frames' format
    fmt = fmt or 'svg'
    if path is None:
        if out.isatty() and fmt in LAYOUT_FORMATS:
            raise UsageError(f'give -o FILE to write the {fmt.upper()} picture '
                             '(-o - for standard output), or --format text to see it here')
        path = '-'
    elif path == '-' and fmt in ('png', 'pdf') and out.isatty():
        raise UsageError(f'will not write {fmt.upper()} to a terminal: redirect it or give -o FILE')
    return fmt, path


def _check_size(graph, limit, what, spread=SPREAD, scene=None):
    """Refuse a graph too large to lay out quickly; else its render.layout_size().
    `scene` is what will be drawn, when that is already known (collapsed, folded)."""
    from ..pictures.scene import scene as draw
    from ..pictures.style import layout_size
    nodes = len(graph.nodes) if scene is None else len(scene.items)
    thing = 'graph' if scene is None or nodes == len(graph.nodes) else 'picture'
    ways_out = 'or write --format dot and lay it out yourself'
    if nodes > limit:
        why = ('a table that long would be slow to draw and hard to read' if spread is None
               else 'laying it out would be slow and the picture unreadable')
        if scene is not None and scene.blocks:
            ways_out = f'draw each block call as one node with --collapse blocks, {ways_out}'
        raise UsageError(
            f'the {thing} has {nodes} nodes, more than the limit of {limit} for {what}: '
            f'{why}. Raise the limit with --max-nodes {nodes}, {ways_out}')
    if spread is None:
        return nodes
    size = layout_size(scene or draw(graph))
    if size > spread * limit:
        needed = -(-size // spread)
        raise UsageError(
            f'the {thing} has {nodes} nodes, but values used far apart make long edges: dot '
            f'would have about {size} nodes and edge bends to place, more than {spread} x '
            f'the limit of {limit} for {what}; it would be slow and the picture a tangle. '
            f'Raise the limit with --max-nodes {needed}, {ways_out}')
    return size


# ---- running dot ----

def _layout(digraph, fmt, max_nodes=None):
    """The picture's bytes (pictures/dot.py), with dot's time limit scaled up
    with a raised --max-nodes, and the command line's ways out in the messages."""
    if fmt != 'dot' and shutil.which('dot') is None:
        raise UsageError(INSTALL_GRAPHVIZ)
    seconds = DOT_SECONDS * max(1, (max_nodes or MAX_NODES) / MAX_NODES)
    return _dot.run_dot(digraph, fmt, seconds, ways_out='; write --format dot and lay it out '
                                                        'yourself, or draw a smaller graph')


def _step_files(graph, values, grads, args, look, fmt='svg', plan=None):
    """{file name: bytes} for every frame of the pass, and index.html."""
    from ..pictures.layout import node_positions
    from ..pictures.scene import scene
    from ..pictures.steps import frame_name, index_html, step_pictures
    forward_steps = getattr(args, 'forward_steps', False)
    # An SVG frame sits on the page, which shows the caption; a PNG or PDF
    # frame is for a slide and carries its own.
    baked = fmt != 'svg'
    look = look._replace(caption=baked)
    pictures = step_pictures(graph, values, grads, rankdir=args.rankdir or 'LR', look=look,
                             forward=forward_steps, fit=_dot.frame_fit(graph, look, args.rankdir),
                             plan=plan)
    if not pictures:
        raise UsageError(_NO_STEPS)
    files = {}
    names = [frame_name(k, len(pictures), fmt) for k in range(len(pictures))]
    svg = None
    for name, (step, picture) in zip(names, pictures):
        if fmt == 'png':
            picture.digraph.attr(dpi=PNG_DPI)
        files[name] = _layout(picture.digraph, fmt, args.max_nodes)
        if svg is None:
            svg = files[name] if fmt == 'svg' else _layout(pictures[0][1].digraph, 'svg',
                                                            args.max_nodes)
            _check_viewable(files[name], fmt)
    # Every frame has the same layout: one SVG tells where each node is.
    where = node_positions(svg)
    captions = [step.caption for step, _ in pictures]
    output = next(item for item in scene(graph).items if item.id == graph.output)
    # ('f = x*y*z', 'loss = (out - target)^2': found by id, as static arguments are no items)
    files['index.html'] = index_html(output.expr or output.title, names, captions,
                                     focus=[where.get(step.node) for step, _ in pictures],
                                     baked=baked, forward=forward_steps).encode('utf-8')
    return files


# ---- text ----

def _text(graph, values, grads, mode, terminal, plan=None):
    """A rich table of the nodes, then the chain rule one node at a time, as bytes:
    coloured and as wide as the terminal if `terminal`, else plain and 120 wide.
    With a checkpoint.Plan, a column says what backward keeps of each node, and
    the steps compute each segment again before its gradients, as the pictures do."""
    from rich.console import Console
    from rich.table import Table

    from ..pictures.scene import scene
    from ..pictures.steps import steps
    from ..pictures.preview import is_array, short as preview
    from ..pictures.style import grad_text
    from ..pictures.text import wrap_terms

    def number(x):   # an array as a line of the table can hold it
        return preview(x)

    def grad_text(item, shown=grad_text):
        return preview(item.grad) if is_array(item.grad) else shown(item)

    if plan is None:
        drawn = scene(graph, values, grads)
        step_list = steps(graph, values, grads) if mode == 'backward' else []
    else:
        from ..pictures.render import drawing
        from ..pictures.steps import checkpoint_steps
        drawn = drawing(graph, values, grads, plan=plan, folds=False)
        step_list = checkpoint_steps(graph, values, grads, plan, drawn)[0]
    table = Table(title=f'{drawn.f} = {graph.text(graph.output, 60)}', title_justify='left')
    has_blocks = bool(drawn.blocks)
    width = shutil.get_terminal_size().columns if terminal else 120
    # A narrow terminal keeps what teaches: the kind shows in 'is', the inputs
    # in the expression.
    narrow = width < 100
    has_blocks = has_blocks and width >= 72
    for column in ('node', 'kind', 'is', 'expression', 'block', 'inputs'):
        if (column != 'block' or has_blocks) and not (narrow and column in ('kind', 'inputs')):
            # Only the expression may fold: numbers and names are never cut.
            table.add_column(column, overflow='fold' if column == 'expression' else 'ellipsis',
                             no_wrap=column != 'expression', ratio=1 if column == 'expression'
                             else None, min_width=len(f'n{len(drawn.items)}') if column == 'node'
                             else 10 if column == 'expression' else None)
    # A number column is as wide as its longest number, so rich shrinks the
    # expression instead of cutting a number.
    if mode != 'structure':
        table.add_column('value', justify='right', style='blue', no_wrap=True,
                         min_width=max(len(number(i.value)) for i in drawn.items))
    if mode == 'backward':
        table.add_column(f'∂{drawn.f}/∂node', justify='right', style='green', no_wrap=True,
                         min_width=max(len(grad_text(i)) if i.live else 1
                                       for i in drawn.items))
    if plan is not None:
        table.add_column('backward keeps', overflow='fold', ratio=1, min_width=10)
    args = {item.id: [] for item in drawn.items}   # ids: an array op's static arguments are not items
    for link in drawn.links:
        args[link.dst].append(f'n{link.src}')
    for item in drawn.items:
        row = [f'n{item.id}'] + ([] if narrow else [item.kind]) + [item.title, item.expr or '']
        row += [item.block or ''] if has_blocks else []
        row += [] if narrow else [', '.join(args[item.id])]
        if mode != 'structure':
            row.append(number(item.value))
        if mode == 'backward':
            row.append(grad_text(item) if item.live else '-')
        if plan is not None:
            row.append('; '.join(([item.store.note] if item.store else []) + list(item.strip)))
        table.add_row(*row)
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=terminal, no_color=not terminal,
                      width=width, highlight=False, markup=False,   # [ ] are text here,
                      emoji=False)                                  # and every:100: too
    console.print(table)
    if plan is not None:
        for line in wrap_terms(drawn.memory, width, indent=0):
            console.print(line, soft_wrap=True)
    if mode == 'backward':
        console.print('\nbackward pass, one node at a time:')
        for k, step in enumerate(step_list, 1):
            for line in wrap_terms(f'{k:>4}. {step.caption}', width):
                console.print(line, soft_wrap=True)
    text = buffer.getvalue()
    if not terminal:   # no trailing blanks in a file: rich pads lines to the table's width
        text = ''.join(line.rstrip() + '\n' for line in text.splitlines())
    return text.encode('utf-8')


# ---- writing ----

def _to_stdout(data, out):
    buffer = getattr(out, 'buffer', None)
    if buffer is not None:
        out.flush()
        buffer.write(data)
        buffer.flush()
    else:
        out.write(data.decode('utf-8', 'replace'))


def write_atomic(path, data):
    """Write bytes to path all or nothing (files.Output)."""
    info = _stat(path)   # follows links: /dev/stdout is the pipe or terminal behind it
    if info is not None and stat.S_ISDIR(info.st_mode):
        raise _cannot(path, 'it is a directory')
    output = Output(path)
    folder = None if output.in_place else os.path.dirname(output.place.file)
    if folder is not None and not os.path.isdir(folder):
        shown = folder if os.path.islink(path) else os.path.dirname(path)   # as the user wrote it
        raise _cannot(path, f"there is no directory '{shown}'")
    with output:
        try:
            output.file.write(data)
        except OSError as error:
            raise _cannot(path, (error.strerror or str(error)).lower()) from None
        output.commit()


def _stat(path):
    try:
        return os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as error:
        raise _cannot(path, (error.strerror or str(error)).lower()) from None


def check_targets(path, folder, names):
    """Refuse, before anything is written, what would fail halfway: -o and
    --steps naming the same place, a file where the folder should be, or a
    folder where a frame should be."""
    if folder is None:
        return
    if os.path.exists(folder) and not os.path.isdir(folder):
        raise _cannot(folder, 'it is not a directory')
    if path not in (None, '-'):
        here = os.path.realpath(path)
        if here == os.path.realpath(folder):
            raise UsageError(f"-o {path} and --steps {folder} name the same path: "
                             'give the picture and the step folder different names')
        if any(here == os.path.realpath(os.path.join(folder, name)) for name in names):
            raise UsageError(f'-o {path} is one of the files --steps writes into {folder}: '
                             'give the picture another name')
    for name in names:
        target = os.path.join(folder, name)
        if os.path.isdir(target):
            raise _cannot(target, 'it is a directory')


def write_folder(folder, files):
    """Write {name: bytes} into folder, index.html last; drop frames left from a longer series."""
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as error:
        raise _cannot(folder, (error.strerror or str(error)).lower()) from None
    for name in sorted(files, key=lambda n: n == 'index.html'):
        write_atomic(os.path.join(folder, name), files[name])
    for name in sorted(os.listdir(folder)):
        if FRAME_FILE.fullmatch(name) and name not in files:
            os.unlink(os.path.join(folder, name))
