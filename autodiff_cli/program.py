"""The commands as a Python object, for notebooks: `Program(text).grad(x=2, y=3)`.

A Program is read as every command reads its program (table/bindings.py:
lowering, its notes, the bindings), and its methods mirror the commands:
eval, grad, hessian, render, diff and check. Each returns an object or text
and does no I/O; only a picture runs Graphviz's `dot` (pictures/dot.py), when
Jupyter asks for it. Errors are AdgradError, as the commands' are.

Values are keyword arguments: a number, a NumPy array or nested lists, or
text the command line would read (`x=2`, `x='pi/4'`); a dict before them
holds names that are also options (`render({'color': 1}, color='magnitude')`).
Bindings are not kept: each call starts from the program's own `input`
defaults. Array programs take every method, as the commands do; diff
refuses an array program with a loop (an AdgradError).
"""

import html

from .core.numbers import plain
from .errors import AdgradError, CheckFailed, UsageError
from .table.bindings import input_values, lower_program, parse_bindings, where

MODES = ('structure', 'forward', 'backward')
MAX_NODES = 2000   # as render's --max-nodes: past it, dot is slow and the picture unreadable
SPREAD = 5         # and its long edges may cost dot this many times as much (cli/render.py)


class Program:
    """A program, lowered once. `notes` holds what lowering noted; `graph` is
    the tape that lower() makes, for the functions of the library."""

    def __init__(self, text):
        if not isinstance(text, str):
            raise UsageError(f'a program is text, not {type(text).__name__}')
        self.text = text
        self.notes = []
        self.graph = lower_program(text, self.notes.append)

    def __repr__(self):
        return f'Program({self.text!r})'

    @property
    def inputs(self):
        """The program's variables, sorted by name (its `input` defaults: graph.defaults)."""
        return sorted(self.graph.inputs)

    # ---- the commands ----

    def eval(self, point=None, /, *, strict=False, **values):
        """`adgrad eval`: a Result with the value, and gradient None."""
        return self._result(point, values, None, strict)

    def grad(self, point=None, /, *, wrt=None, strict=False, **values):
        """`adgrad grad`: a Result with the value and `gradient`, {name: ∂f/∂name}
        for every variable sorted by name, or for `wrt`'s in its order."""
        return self._result(point, values, self._names(wrt), strict)

    def memory(self, point=None, /, *, checkpoint=None, memory_limit=None, **values):
        """`adgrad grad --memory [--checkpoint P]`: (gradient, Memory), the
        gradient {name: ∂f/∂name} computed keeping what `checkpoint` says
        ('sqrt', 'every:K', 'auto' with memory_limit: bytes, or text as
        --memory-limit reads it),
        and the Memory of core/checkpoint.py: values and bytes kept, peak,
        what holds the most, values computed again."""
        from .core import checkpoint as checkpoints
        from .core.graph import is_array_program
        inputs, _ = self._point(point, values)
        limit = checkpoints.parse_bytes(memory_limit) if isinstance(memory_limit, str) \
            else memory_limit
        policy = checkpoints.policy(checkpoint, limit)
        if is_array_program(self.graph, inputs):
            run = checkpoints.array_gradients(self.graph, inputs, policy)
        else:
            from .core.primitives import NUMBERS
            run = checkpoints.gradients(self.graph, inputs, NUMBERS, policy)
        return {name: run.grads[self.graph.inputs[name]] for name in sorted(self.graph.inputs)}, \
            run.memory

    def hessian(self, point=None, /, *, wrt=None, **values):
        """`adgrad hessian`: the matrix of second derivatives, as a list of rows,
        over every variable sorted by name, or over `wrt`'s in its order; an
        array is flattened row-major, as `adgrad hessian` labels W[0,1]."""
        from .core.graph import is_array_program
        from .core.passes import require_inputs
        names = self._names(wrt, 'differentiate')
        inputs, _ = self._point(point, values)
        require_inputs(self.graph, inputs)
        if is_array_program(self.graph, inputs):
            from .derive.array_record import array_hessian
            return array_hessian(self.graph, inputs, names).tolist()
        from .derive.hessian import hessian
        return [list(map(float, row)) for row in hessian(self.graph, inputs, names)]

    def diff(self, wrt=None, order=1, lang='adgrad'):
        """`adgrad diff`: the derivative as text in `lang` ('adgrad', 'numpy', 'c'
        or 'latex'), the `order`-th; order 2 by several variables gives the
        mixed partials, a higher order takes one variable."""
        from .derive.printers import LANGUAGES, derivative_text
        if lang not in LANGUAGES:
            raise UsageError(f"lang must be one of {', '.join(LANGUAGES)}, not {lang!r}")
        if not (isinstance(order, int) and order >= 1):
            raise UsageError(f'order must be a positive whole number, not {order!r}')
        names = self._names(wrt, 'differentiate')
        self._numbers_only(None, 'Program.diff')
        if order > 2 and len(names) != 1:
            raise UsageError(f'order={order} differentiates with respect to one variable: '
                             "give it as wrt='x' (order=2 takes several, for the mixed partials)")
        return derivative_text(self.graph, names, order, lang)

    def check(self, point=None, /, *, wrt=None, order=1, **values):
        """`adgrad check`: a Check of reverse mode against finite differences,
        per variable (and per Hessian entry with order=2). Its `ok` is False
        where the command would exit 1; `raise_for_failure()` raises CheckFailed."""
        from .derive.check import check_gradient, check_hessian
        if order not in (1, 2):
            raise UsageError(f'order must be 1 or 2, not {order!r}')
        from .core.graph import is_array_program
        names = self._names(wrt, 'check')
        inputs, warnings = self._point(point, values)
        if is_array_program(self.graph, inputs):   # along random directions, as check does
            from .derive.array_check import check_array_hessian, check_arrays
            rows = check_arrays(self.graph, inputs, names)
            if order == 2:
                rows += check_array_hessian(self.graph, inputs, names)
        else:
            rows = check_gradient(self.graph, inputs, names)
            if order == 2:
                rows += check_hessian(self.graph, inputs, names)
        warnings += [f'∂f/∂{row.what}: finite differences cannot be trusted ({row.reason})'
                     for row in rows if row.verdict == 'warn']
        return Check(rows, warnings)

    def render(self, point=None, /, *, mode=None, collapse=None, color='plain', products=False,
               rankdir=None, step=None, forward_steps=False, legend=True, font_scale=1.0,
               size=None, max_nodes=MAX_NODES, unroll=False, **values):
        """`adgrad render`: the picture (pictures/render.py's Picture) that the
        command draws from the same options, laid out to fit a slide as it does.
        `mode` is render's --pass, or 'structure'; by default 'backward' when
        every variable has a value, else 'structure'. `step=N` is frame N;
        `unroll=True` draws an array program entry by entry. A picture of more
        than `max_nodes` nodes is refused, as --max-nodes does."""
        from .pictures.style import Look
        inputs, warnings = self._point(point, values)
        graph = self.graph
        if unroll:
            from .pictures.unroll import unroll as unrolled
            graph, inputs = unrolled(graph, inputs, option='unroll')
        if mode not in (None, *MODES):
            raise UsageError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
        if collapse not in (None, 'blocks'):
            raise UsageError(f"collapse must be None or 'blocks', not {collapse!r}")
        if color not in ('plain', 'magnitude'):
            raise UsageError(f"color must be 'plain' or 'magnitude', not {color!r}")
        if rankdir not in (None, 'LR', 'TB'):
            raise UsageError(f"rankdir must be None, 'LR' or 'TB', not {rankdir!r}")
        if not (isinstance(font_scale, (int, float)) and 0.25 <= font_scale <= 8):
            raise UsageError(f'font_scale must be a number from 0.25 to 8, not {font_scale!r}')
        if size is not None and not (isinstance(size, (tuple, list)) and len(size) == 2 and all(
                isinstance(n, (int, float)) and 0.5 <= n <= 1000 for n in size)):
            raise UsageError(f'size must be (width, height) in inches, such as (13.3, 7.5), '
                             f'not {size!r}')
        missing = [name for name in graph.inputs if name not in inputs]
        if not (isinstance(max_nodes, int) and max_nodes >= 1):
            raise UsageError(f'max_nodes must be a positive whole number, not {max_nodes!r}')
        if step is not None:
            if len(graph.nodes) > max_nodes:
                raise UsageError(f'the graph has {len(graph.nodes)} nodes, more than '
                                 f'max_nodes={max_nodes}: raise it to draw its steps')
            if collapse:
                raise UsageError('collapse draws a whole call as one node, and the steps go '
                                 'node by node inside it: use one or the other')
            if mode in ('structure', 'forward') and not forward_steps:
                raise UsageError('step draws the backward pass; for the forward pass give '
                                 'forward_steps=True')
            mode = 'backward'
        elif forward_steps:
            raise UsageError('forward_steps needs step=N')
        if mode is None:
            mode = 'structure' if missing else 'backward'
            if missing and len(missing) < len(graph.inputs):
                warnings.append(f"no value for '{missing[0]}': drawing the structure only "
                                '(give every variable a value to see values and gradients)')
        look = Look(color=color, legend=legend, font_scale=font_scale, products=products,
                    size=None if size is None else f'{size[0]:g},{size[1]:g}')
        values_, grads = _passes(graph, inputs, mode, warnings)
        if step is not None:
            picture = _frame(graph, values_, grads, step, rankdir, look, forward_steps)
        else:
            picture = _whole(graph, values_, grads, mode, rankdir, look, collapse, max_nodes)
        picture.warnings = warnings
        return picture

    def page(self, point=None, /, *, color='plain', rankdir='LR', max_nodes=MAX_NODES, **values):
        """`adgrad render --format html`: the interactive page, as text (a node
        per tape entry: refused past `max_nodes`, as the command refuses it)."""
        from .core.passes import require_inputs
        from .pictures.dot import run_dot
        from .pictures.page import interactive_page
        from .pictures.style import Look
        inputs, _ = self._point(point, values)
        require_inputs(self.graph, inputs)
        if len(self.graph.nodes) > max_nodes:
            raise UsageError(f'the graph has {len(self.graph.nodes)} nodes, more than '
                             f'max_nodes={max_nodes}: raise it to make its page')
        return interactive_page(self.graph, inputs, look=Look(color=color), rankdir=rankdir,
                                layout=lambda digraph: run_dot(digraph, 'svg')).decode('utf-8')

    def _repr_svg_(self):
        """In Jupyter, a Program shows what `adgrad render` draws of it unbound;
        where it cannot be drawn (no Graphviz), None: Jupyter shows its repr."""
        return _drawn(self.render)

    # ---- as every command reads its values ----

    def _point(self, point, values):
        """({variable: float}, warnings): the program's defaults, then the values
        given, read as the command line reads NAME=VALUE."""
        given = dict(point or {}, **values) if point is None or isinstance(point, dict) else None
        if given is None:
            raise UsageError(f'values are a dict or keywords, not {type(point).__name__}')
        words, arrays = [], {}
        for name, value in given.items():
            if not (isinstance(name, str) and name.isascii() and name.isidentifier()):
                raise UsageError(f'bad binding {name!r}: a name is a variable, such as x')
            if isinstance(value, str) and value.startswith('@'):
                raise UsageError(f"{name}='{value}' reads a file: load it yourself (numpy.load) "
                                 'and give the array')
            array = _array(name, value)
            if array is not None:   # the name's rules are read as for any binding; the value is kept
                arrays[name] = array
                value = 0.0
            words.append(f'{name}={_text(name, value)}')
        bindings = parse_bindings(words, self.graph)
        bindings.update(arrays)
        warnings = []
        return input_values(self.graph, bindings, warnings.append), warnings

    def _names(self, wrt, what=None):
        """wrt's variables (a list, or 'x,y'), else every variable sorted by name."""
        from .core.passes import check_names
        if what is not None and not self.graph.inputs:
            raise UsageError(f'the expression has no variables to {what} with respect to')
        if wrt is None:
            return sorted(self.graph.inputs)
        names = [n.strip() for n in wrt.split(',')] if isinstance(wrt, str) else list(wrt)
        check_names(self.graph, names)
        if len(set(names)) < len(names):
            raise UsageError(f'wrt lists a variable twice: {names}')
        return names

    def _passes(self, inputs, mode, warnings, strict=False):
        return _passes(self.graph, inputs, mode, warnings, strict)

    def _result(self, point, values, names, strict):
        from .core.graph import is_array_program
        from .errors import numerical
        inputs, warnings = self._point(point, values)
        if is_array_program(self.graph, inputs):
            return self._array_result(inputs, names, strict, warnings)
        mode = 'forward' if names is None else 'backward'
        node_values, grads = self._passes(inputs, mode, warnings, strict)
        gradient = None
        if names is not None:
            gradient = {name: grads[self.graph.inputs[name]] for name in names}
            infinite = [n for n, g in gradient.items() if g - g != 0]
            if infinite:
                numerical(f'the gradient ∂f/∂{infinite[0]} is {gradient[infinite[0]]!r}',
                          strict, warnings.append)
        return Result(self, node_values[self.graph.output], gradient,
                      {n: inputs[n] for n in sorted(self.graph.inputs)}, warnings)


    def _array_result(self, inputs, names, strict, warnings):
        """eval and grad of an array program, as cli/arrays.py computes them:
        values and gradients in their own shapes, a 0-d one as a float."""
        from .core import tensors
        from .errors import numerical
        values = tensors.evaluate(self.graph, inputs)
        bad = tensors.first_nonfinite(values)
        if bad is not None:
            numerical(f'{where(self.graph, bad)} is not finite, the first non-finite value',
                      strict, warnings.append)
        value = values[self.graph.output]
        gradient = None
        if names is not None:
            if value.ndim:
                raise UsageError(f'grad needs a scalar output, and this one has shape '
                                 f'{tensors.shown(value.shape)}: take sum(...) or mean(...) '
                                 'of it')
            grads = tensors.gradients(self.graph, values, wrt=names)
            gradient = {name: plain(grads[self.graph.inputs[name]]) for name in names}
            infinite = [n for n, g in gradient.items() if not tensors.is_finite(g)]
            if infinite:
                numerical(f'the gradient ∂f/∂{infinite[0]} is not finite', strict,
                          warnings.append)
        return Result(self, plain(value), gradient,
                      {n: plain(inputs[n]) for n in sorted(self.graph.inputs)}, warnings)

    def _numbers_only(self, inputs, what):
        """Refuse an array program where the command refuses it (cli/common.refuse_arrays)."""
        from .core.graph import is_array_program
        if is_array_program(self.graph, inputs):
            raise UsageError(f'{what} takes programs of numbers only, not of arrays, so far: '
                             'eval and grad take arrays')


def _array(name, value):
    """A list, tuple or NumPy array of numbers as a float64 array (one of 0
    axes stays a number), else None; AdgradError if its entries are not numbers."""
    if not (isinstance(value, (list, tuple)) or hasattr(value, '__array__')):
        return None
    import numpy as np
    try:
        array = np.array(value, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        raise UsageError(f'bad binding {name}: an array holds numbers, in rows of one '
                         'length') from None
    return None if array.ndim == 0 else array


def _text(name, value):
    """A value as the command line's NAME=VALUE text: a number exactly (repr
    reads back to the same float), or text such as 'pi/4' as it is."""
    if isinstance(value, str):
        return value
    try:
        if isinstance(value, bool):
            raise TypeError
        return repr(float(value))   # a NumPy number or a 0-d array too
    except (TypeError, ValueError, OverflowError):
        raise UsageError(f"bad binding {name}={value!r}: a value is a number, or text such "
                         "as 'pi/4'") from None


def _passes(graph, inputs, mode, warnings, strict=False):
    """(values, grads) of the passes `mode` runs, over numbers or arrays (whose
    output must then be one number); a non-finite value is a warning, or under
    `strict` a NumericalError, as in the commands."""
    from .core.graph import is_array_program
    from .core.passes import backward, first_nonfinite, forward
    from .errors import numerical
    if mode == 'structure':
        return None, None
    if is_array_program(graph, inputs):
        from .core import tensors
        values = tensors.evaluate(graph, inputs)
        bad = tensors.first_nonfinite(values)
        if bad is not None:
            numerical(f'{where(graph, bad)} is not finite, the first non-finite value', strict,
                      warnings.append)
        if mode != 'backward':
            return values, None
        if tensors.shape_of(values[graph.output]):
            raise UsageError(f'the output has shape {tensors.shown(tensors.shape_of(values[graph.output]))}: '
                             'a gradient needs a single number, so take sum(...) or mean(...) '
                             "of it, or draw the values alone with mode='forward'")
        return values, tensors.gradients(graph, values)
    values = forward(graph, inputs)
    bad = first_nonfinite(values)
    if bad is not None:
        numerical(f'{where(graph, bad)} is {values[bad]!r}, the first non-finite value',
                  strict, warnings.append)
    return values, backward(graph, values) if mode == 'backward' else None


def _whole(graph, values, grads, mode, rankdir, look, collapse, max_nodes):
    """The whole picture, as render's command line draws it (cli/render._picture),
    refused past max_nodes drawn nodes or SPREAD times as many to lay out."""
    from .pictures.dot import FIT_NODES, fitted
    from .pictures.render import drawing, styled
    from .pictures.style import layout_size
    drawn = drawing(graph, values, grads, collapse, look)
    size = layout_size(drawn)
    if len(drawn.items) > max_nodes or size > SPREAD * max_nodes:
        hint = "collapse='blocks', " if drawn.blocks else ''
        raise UsageError(f'the picture has {len(drawn.items)} nodes ({size} to lay out with '
                         f'its long edges), more than max_nodes={max_nodes} allows: dot would '
                         f'be slow and the picture unreadable. Try {hint}a smaller graph, or '
                         'raise max_nodes')

    def draw(direction, dressed):
        return styled(drawn, mode, direction, None, dressed)
    if look.size is None and size <= FIT_NODES:
        return fitted(draw, look, rankdir, compact=not drawn.blocks)
    return draw(rankdir or 'LR', look)


def _frame(graph, values, grads, step, rankdir, look, forward_steps):
    """Frame `step` of the pass, caption included (render --step N)."""
    from .pictures.dot import frame_fit
    from .pictures.steps import step_pictures
    pictures = step_pictures(graph, values, grads, rankdir=rankdir or 'LR', look=look,
                             forward=forward_steps, fit=frame_fit(graph, look, rankdir))
    if not pictures:
        raise UsageError('the output depends on no variable, so no gradient flows back and '
                         'there are no steps to show')
    if not (isinstance(step, int) and 1 <= step <= len(pictures)):
        raise UsageError(f'step={step!r}: the pass has steps 1 to {len(pictures)}')
    return pictures[step - 1][1]


class Result:
    """One point's `value`, `gradient` ({name: ∂f/∂name}, None from eval),
    `inputs` and `warnings`. Jupyter shows the interactive page (`_repr_html_`,
    in a frame), or where the page cannot be made, the picture (`_repr_svg_`)."""

    def __init__(self, program, value, gradient, inputs, warnings):
        self.program, self.value, self.gradient = program, value, gradient
        self.inputs, self.warnings = inputs, warnings

    def __repr__(self):
        shown = f'value={self.value!r}'
        if self.gradient is not None:
            shown += f', gradient={self.gradient!r}'
        return f'Result({shown})'

    def picture(self, **options):
        """The picture of this point: Program.render with its values and `options`."""
        mode = 'backward' if self.gradient is not None else 'forward'
        return self.program.render(self.inputs, **dict(dict(mode=mode), **options))

    def _repr_svg_(self):
        return _drawn(self.picture)

    def _repr_html_(self):
        try:
            page = self.program.page(self.inputs)
        except AdgradError:   # an op the page cannot compute (erf): Jupyter shows the SVG
            return None
        # A frame of its own: the page's styles and script stay out of the notebook's.
        height = 240 + 40 * len(self.inputs) + _svg_height(page)
        return (f'<iframe srcdoc="{html.escape(page, quote=True)}" sandbox="allow-scripts" '
                f'style="width: 100%; height: {height}px; border: none"></iframe>')


def _drawn(draw):
    """The SVG of draw()'s picture, or None where it cannot be made: a _repr_
    that raises is a traceback in Jupyter, where None shows the text repr
    (`.render()` still raises, and says what to install)."""
    try:
        return draw()._repr_svg_()
    except AdgradError:
        return None


def _svg_height(page):
    """The picture's height in CSS px, from the width and height dot wrote (pt)."""
    from .pictures.layout import picture_size
    at = page.find('<svg')
    size = picture_size(page[at:at + 4000].encode('utf-8'), 'svg') if at >= 0 else None
    return round(size[1] * 96) if size else 600


class Check:
    """`check`'s rows (derive/check.Row: what, ad, fd, abs_error, rel_error,
    verdict, reason), its warnings, and `ok`: no row FAILs."""

    def __init__(self, rows, warnings):
        self.rows, self.warnings = rows, warnings

    @property
    def ok(self):
        return all(row.verdict != 'FAIL' for row in self.rows)

    def raise_for_failure(self):
        """Raise CheckFailed, as `adgrad check` exits 1, for the first failing row."""
        for row in self.rows:
            if row.verdict == 'FAIL':
                raise CheckFailed(f'∂f/∂{row.what}: reverse mode gives {row.ad!r}, finite '
                                  f'differences {row.fd!r}')

    def __repr__(self):
        verdicts = ', '.join(f'{row.what}: {row.verdict}' for row in self.rows)
        return f'Check({verdicts})'

    def _repr_html_(self):
        head = ''.join(f'<th>{c}</th>' for c in ('variable', 'ad', 'fd', 'abs error',
                                                  'rel error', 'verdict', 'reason'))
        body = ''.join('<tr>' + ''.join(f'<td>{html.escape(str(cell))}</td>' for cell in row)
                       + '</tr>' for row in self.rows)
        return f'<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


__all__ = ['Program', 'Result', 'Check']
