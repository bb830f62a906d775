"""Minimising a scalar program with its exact gradient (and Hessian).

lbfgs, newton and trust are scipy.optimize's (the optimize extra), given
reverse mode's gradient and the recorded Hessian (hessian.py); gd, momentum
and adam are the training loops of the tutorials, a few lines each. Every
iteration can be reported to a callback; the library does no I/O.
"""

from collections import namedtuple

from ..errors import NumericalError, UsageError

SCIPY_METHODS = {'lbfgs': 'L-BFGS-B', 'newton': 'Newton-CG', 'trust': 'trust-exact'}
LOOPS = ('gd', 'momentum', 'adam')
METHODS = tuple(SCIPY_METHODS) + LOOPS
BOUNDED = ('lbfgs', 'trust')   # trust with bounds is scipy's trust-constr
DEFAULT_LR = {'gd': 1e-3, 'momentum': 1e-3, 'adam': 1e-2}
DEFAULT_STEPS = 1000           # for the loops; scipy's methods keep their own limits
DEFAULT_GTOL = 1e-6            # for the loops; scipy's methods keep their own tolerances
NEWTON_XTOL = 1e-8             # but Newton-CG's (see _scipy)
LBFGS_FTOL = 1e-15             # and L-BFGS-B's (see _scipy)
# Past this many times the start's size, a point or a fall of f that is still
# going on is taken for f unbounded below: there is no minimiser to find.
UNBOUNDED = 1e10

# scipy's reasons for stopping, by a phrase of its message, in plain words.
STOPS = (('PROJECTED GRADIENT', '|∇f| is below the tolerance'),
         ('RELATIVE REDUCTION OF F', 'f changes by less than the tolerance'),
         ('ITERATIONS REACHED LIMIT', 'it reached the iteration limit, {steps} steps, with '
                                      '|∇f| = {norm:.3g} (raise --steps)'),
         ('Maximum number of iterations', 'it reached the iteration limit, {steps} steps, with '
                                          '|∇f| = {norm:.3g} (raise --steps)'),
         ('EVALUATIONS EXCEEDS LIMIT', 'it reached the limit on evaluations of f, with '
                                       '|∇f| = {norm:.3g} (raise --steps)'),
         ('ABNORMAL', 'the line search found no lower f: |∇f| = {norm:.3g} is as small as '
                      'float64 resolves here, or f is not smooth'),
         ('precision loss', 'no step lowers f in float64: |∇f| = {norm:.3g}'))

# x: {name: value} where the method stopped; f; grad_norm: |∇f| there (of
# the projected gradient where bounds hold); iterations, evaluations (of f
# and ∇f together; Hessians apart); converged; why: one line.
Result = namedtuple('Result', 'x f grad_norm iterations evaluations hessians converged why')


class Objective:
    """f and ∇f of `graph` at a vector of the `names`, the other inputs
    `fixed`; the last point's results kept, so a callback costs nothing."""

    def __init__(self, graph, names, fixed):
        self.graph, self.names, self.fixed = graph, list(names), dict(fixed)
        self.evaluations = self.hessians = 0
        self.iteration = 0
        self._last = None
        self._prepared = None

    def split(self, v):
        """{name: value} of the vector v."""
        return {n: float(x) for n, x in zip(self.names, v)}

    def point(self, v):
        return {**self.fixed, **self.split(v)}

    def value_and_gradient(self, v):
        """(f, ∇f) at v; the last point's kept, as scipy asks for it again."""
        import numpy as np
        key = np.asarray(v, dtype=np.float64).tobytes()
        if self._last is None or self._last[0] != key:
            self.evaluations += 1
            self._last = (key, *self._evaluate(v))
        return self._last[1], self._last[2].copy()

    def _evaluate(self, v):
        import numpy as np

        from ..core.passes import backward, first_nonfinite, forward
        values = forward(self.graph, self.point(v))
        f = values[self.graph.output]
        bad = first_nonfinite(values)
        if bad is not None:
            raise NumericalError(f'f is not finite at iteration {self.iteration}: '
                                 f'{_where(self.graph, bad)} is {values[bad]!r}, the first '
                                 'non-finite value')
        grads = backward(self.graph, values)
        gradient = np.array([grads[self.graph.inputs[n]] or 0.0 for n in self.names],
                            dtype=np.float64)
        if not np.isfinite(gradient).all():
            name = self.names[int(np.flatnonzero(~np.isfinite(gradient))[0])]
            raise NumericalError(f'the gradient ∂f/∂{name} is not finite at iteration '
                                 f'{self.iteration}: {gradient[self.names.index(name)]!r}')
        return float(f), gradient

    def hessian(self, v):
        import numpy as np

        from .hessian import hessian, prepare
        if self._prepared is None:
            self._prepared = prepare(self.graph, self.names)
        self.hessians += 1
        matrix = np.array(hessian(self.graph, self.point(v), self.names, self._prepared))
        if not np.isfinite(matrix).all():
            raise NumericalError(f'the Hessian is not finite at iteration {self.iteration}')
        return matrix


class ArrayObjective(Objective):
    """f and ∇f of an array program at a vector of the `names`' entries, each
    name's array flattened row-major in turn; the Hessian is the recorded
    gradient's (derive/array_record.py)."""

    def __init__(self, graph, names, fixed, start):
        import numpy as np
        super().__init__(graph, names, fixed)
        self.shapes = [np.shape(start[n]) for n in self.names]
        self.ends = np.cumsum([int(np.prod(shape)) for shape in self.shapes]).tolist()

    def split(self, v):
        """{name: its array (a float for a scalar)} of the vector v."""
        import numpy as np
        parts = np.split(np.asarray(v, dtype=np.float64), self.ends[:-1])
        return {n: part.reshape(shape) if shape else float(part[0])
                for n, part, shape in zip(self.names, parts, self.shapes)}

    def _evaluate(self, v):
        import numpy as np

        from ..core import tensors
        values = tensors.evaluate(self.graph, self.point(v))
        f = values[self.graph.output]
        if np.ndim(f):
            raise UsageError(f'minimize needs a scalar output, and this one has shape '
                             f'{tensors.shown(np.shape(f))}: take sum(...) or mean(...) of it')
        if not np.isfinite(f):
            bad = tensors.first_nonfinite(values)
            raise NumericalError(f'f is not finite at iteration {self.iteration}: '
                                 f'{_where(self.graph, bad)} is not finite, the first such value')
        grads = tensors.gradients(self.graph, values, wrt=self.names)
        gradient = np.concatenate([np.ravel(grads[self.graph.inputs[n]]) for n in self.names])
        if not np.isfinite(gradient).all():
            raise NumericalError(f'the gradient is not finite at iteration {self.iteration}')
        return float(f), gradient

    def hessian(self, v):
        import numpy as np

        from .array_record import array_hessian
        self.hessians += 1
        matrix = array_hessian(self.graph, self.point(v), self.names)
        if not np.isfinite(matrix).all():
            raise NumericalError(f'the Hessian is not finite at iteration {self.iteration}')
        return matrix


def _where(graph, i):
    return f'{graph.text(i, 60) or graph.label(i)} (node {i})'


def minimize(graph, start, names, method='lbfgs', fixed=None, bounds=None, lr=None,
             steps=None, gtol=None, trace=None):
    """Minimise `graph` over `names` from `start` ({name: value}), the other
    inputs `fixed`, by `method` (METHODS); a Result. `bounds`: {name: (lo,
    hi)}, None for no bound; `gtol`: scipy's tolerance (Newton-CG's xtol),
    or |∇f| for the loops; `trace(iteration, x, f, grad_norm)` is called at
    the start and after every iteration. Raises NumericalError at a
    non-finite f, gradient or Hessian, UsageError for bounds a method refuses."""
    import numpy as np
    if method not in METHODS:
        raise UsageError(f"unknown method '{method}' (choose from {', '.join(METHODS)})")
    if bounds and method not in BOUNDED:
        raise UsageError(f"--method {method} takes no bounds: use lbfgs or trust, "
                         'whose scipy methods keep them')
    from ..core.graph import is_array_program
    if is_array_program(graph, {**(fixed or {}), **start}):
        objective = ArrayObjective(graph, names, fixed or {}, start)
        x0 = np.concatenate([np.ravel(np.asarray(start[n], dtype=np.float64)) for n in names])
        each = [n for n, shape in zip(names, objective.shapes) for _ in range(int(np.prod(shape)))]
    else:
        objective = Objective(graph, names, fixed or {})
        x0 = np.array([start[n] for n in names], dtype=np.float64)
        each = names
    box = None
    if bounds:
        box = [bounds.get(n, (None, None)) for n in each]
        lo = np.array([-np.inf if b[0] is None else b[0] for b in box])
        hi = np.array([np.inf if b[1] is None else b[1] for b in box])
        if (x0 < lo).any() or (x0 > hi).any():
            name = each[int(np.flatnonzero((x0 < lo) | (x0 > hi))[0])]
            what = f'{name}={start[name]:g}' if not np.ndim(start[name]) else f'of {name}'
            raise UsageError(f"the start {what} is outside its bounds")

    last = []

    def report(v):
        f, g = objective.value_and_gradient(v)
        norm = _norm(v, g, box)
        if trace is not None:
            trace(objective.iteration, v, f, norm)
        if last and f < last[-1] and _far(v, f, x0, last[0]):
            raise _Unbounded(v, f, norm)
        last.append(f)
        return f, g, norm
    f0, g0, norm0 = report(x0)
    if not g0.any() and not objective.hessian(x0).any():
        return _result(objective, x0, f0, norm0, False,
                       'a flat region: the gradient and the Hessian are exactly 0 at the '
                       'start, so no method can move (a step, floor, or a dead branch?)')
    try:
        if method in LOOPS:
            return _loop(objective, x0, method, lr or DEFAULT_LR[method],
                         steps or DEFAULT_STEPS, DEFAULT_GTOL if gtol is None else gtol, report,
                         norm0)
        return _scipy(objective, x0, method, box, steps, gtol, report)
    except _Unbounded as stop:
        v, f, norm = stop.args
        k = int(np.argmax(np.abs(v)))
        return _result(objective, v, f, norm, False,
                       f'f seems unbounded below: it fell to {f:.3g} with {each[k]} at '
                       f'{v[k]:.3g}, and was still falling (bound {each[k]} with --bounds, or '
                       'check the sign of f)')


class _Unbounded(Exception):
    """f still falling far from the start: (the point, f, |∇f|) there."""


def _far(v, f, x0, f0):
    """Whether v, or f's fall from f0, is UNBOUNDED times past the start's size."""
    return _size(v) > UNBOUNDED * max(1.0, _size(x0)) or f < f0 - UNBOUNDED * max(1.0, abs(f0))


def _size(v):
    import numpy as np
    return float(np.abs(v).max()) if np.size(v) else 0.0


def _norm(v, g, box):
    """|∇f|, or where bounds hold, of the gradient projected onto them."""
    import numpy as np
    if box is not None:
        lo = np.array([-np.inf if b[0] is None else b[0] for b in box])
        hi = np.array([np.inf if b[1] is None else b[1] for b in box])
        g = v - np.clip(v - g, lo, hi)
    return float(np.linalg.norm(g))


def _result(objective, v, f, norm, converged, why):
    x = objective.split(v)
    return Result(x, f, norm, objective.iteration, objective.evaluations, objective.hessians,
                  converged, why)


def _loop(objective, v, method, lr, steps, gtol, report, norm):
    import numpy as np
    f, g = objective.value_and_gradient(v)
    velocity, m, s = np.zeros_like(v), np.zeros_like(v), np.zeros_like(v)
    for step in range(1, steps + 1):
        if norm <= gtol:
            break
        if method == 'gd':
            v = v - lr * g
        elif method == 'momentum':
            velocity = 0.9 * velocity - lr * g
            v = v + velocity
        else:   # adam (Kingma and Ba), with its usual constants
            m = 0.9 * m + 0.1 * g
            s = 0.999 * s + 0.001 * g * g
            v = v - lr * (m / (1 - 0.9**step)) / (np.sqrt(s / (1 - 0.999**step)) + 1e-8)
        objective.iteration = step
        if not np.isfinite(v).all():
            raise NumericalError(f'diverged at iteration {step}: a step of {method} with '
                                 f'--lr {lr:g} left the finite numbers (try a smaller --lr)')
        f, g, norm = report(v)
    if norm <= gtol:
        return _result(objective, v, f, norm, True, f'|∇f| = {norm:.3g} <= {gtol:g}')
    return _result(objective, v, f, norm, False,
                   f'it reached the iteration limit, {steps} steps, with |∇f| = {norm:.3g} '
                   f'above {gtol:g} (raise --steps, or change --lr from {lr:g})')


def _scipy(objective, x0, method, box, steps, gtol, report):
    import warnings

    import numpy as np
    from scipy.optimize import minimize as scipy_minimize

    def callback(v, *state):   # trust-constr passes its state too
        objective.iteration += 1
        report(np.array(v, dtype=np.float64))
    name = SCIPY_METHODS[method]
    options = {} if steps is None else {'maxiter': steps}
    if method == 'newton':
        # Newton-CG stops on the step's size, and its 1e-5 stopped the chained
        # Rosenbrock at |∇f| = 0.03; at 1e-8 it is 7e-10, for 4% more steps.
        options['xtol'] = NEWTON_XTOL if gtol is None else gtol
    elif gtol is not None:   # else scipy's own tolerances
        options['gtol'] = gtol
    if method == 'lbfgs':
        # The default ftol (2e-9 relative) stopped Wood's function at a saddle
        # with |∇f| = 2e-3 and called it converged; it now ends on the gradient.
        options['ftol'] = LBFGS_FTOL
    kwargs = {'jac': True}
    if method == 'lbfgs':
        kwargs['bounds'] = box
    elif method == 'trust' and box is not None:
        from scipy.optimize import Bounds
        name = 'trust-constr'
        kwargs.update(hess=objective.hessian, bounds=Bounds(
            [-np.inf if b[0] is None else b[0] for b in box],
            [np.inf if b[1] is None else b[1] for b in box]))
    else:
        kwargs['hess'] = objective.hessian
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')   # scipy's own warnings repeat its message
        found = scipy_minimize(objective.value_and_gradient, x0, method=name, callback=callback,
                               options=options, **kwargs)
    v = np.asarray(found.x, dtype=np.float64)
    f, g = objective.value_and_gradient(v)
    message = found.message.decode() if isinstance(found.message, bytes) else str(found.message)
    norm = _norm(v, g, box)
    why = next((plain for phrase, plain in STOPS if phrase in message), message.rstrip('.'))
    return _result(objective, v, f, norm, bool(found.success),
                   why.format(steps=found.get('nit', objective.iteration), norm=norm))
