"""Non-linear least squares: a model of numbers fitted to a data set's target
column, with the exact Jacobian of its residuals.

The residual of row i is sqrt(w_i) (model_i - y_i). Its Jacobian is the
gradient of the model with respect to each parameter at every row, which
the batch engine (core/batch.py) computes for all rows at once: the
derivatives gnuplot's `fit` takes by finite differences are exact here.
scipy.optimize.least_squares does the steps (the optimize extra): MINPACK's
Levenberg-Marquardt, as gnuplot's, or a trust region where a robust loss
needs one. Standard errors are sqrt of the diagonal of (JᵀJ)⁻¹ s², with
s² = RSS / (rows - parameters), as NIST's certified values and gnuplot's
"asymptotic standard errors" are computed.
"""

from collections import namedtuple

from ..errors import NumericalError, UsageError

LOSSES = ('linear', 'soft_l1', 'huber', 'cauchy', 'arctan')
TOLERANCE = 1e-14   # ftol, xtol and gtol: NIST certifies 11 digits, a fit should reach 9

# parameters, errors: {name: value}; rss: the weighted residual sum of squares;
# dof: rows - parameters; covariance, correlation: matrices in parameter order;
# evaluations: of the residuals, jacobians: of the Jacobian; why: scipy's message.
# not_finite: the first point scipy tried where the model was not finite, or None.
FitResult = namedtuple('FitResult', 'parameters errors rss dof rows covariance correlation '
                                    'evaluations jacobians converged why not_finite')


class Residuals:
    """The residuals and their Jacobian at a vector of the parameters, over
    every row; the last point's kept, as scipy asks for both at each point."""

    def __init__(self, graph, names, columns, target, weights=None):
        import numpy as np
        self.graph, self.names, self.columns = graph, list(names), dict(columns)
        self.target = np.asarray(target, dtype=np.float64)
        self.rows = self.target.size
        self.scale = None if weights is None else np.sqrt(np.asarray(weights, dtype=np.float64))
        self.evaluations = self.jacobians = 0
        self._last = None   # (the parameters' bytes, the gradient there)
        self.not_finite, self.first_not_finite, self.last_not_finite = 0, None, None

    def _run(self, p, wrt):
        """The model's value and gradient at every row. Where they are not
        finite, they are given to scipy as they are (its trust region then
        takes a shorter step), and the first such point is kept to be named."""
        from ..core.batch import run_batch
        point = {**self.columns, **{n: float(v) for n, v in zip(self.names, p)}}
        value, gradient, bad = run_batch(self.graph, point, self.rows, wrt)
        if bad is not None:
            node, count = bad
            what = (f'the derivative by {wrt[node - len(self.graph.nodes)]}'
                    if node >= len(self.graph.nodes) else
                    f'{self.graph.text(node, 60) or self.graph.label(node)} (node {node})')
            self.not_finite += 1
            self.first_not_finite = self.first_not_finite or (
                f'{what} is not finite in {count} of {self.rows} rows at {_point(self.names, p)}')
            self.last_not_finite = f'{what} is not finite in {count} of {self.rows} rows'
        else:
            self.last_not_finite = None
        return value, gradient

    def __call__(self, p):
        # The gradient comes with the value: scipy asks for the Jacobian at
        # nearly every point it evaluates, and one pass then serves both.
        import numpy as np
        self.evaluations += 1
        value, gradient = self._run(p, self.names)
        self._last = (np.asarray(p, dtype=np.float64).tobytes(), gradient)
        residual = value - self.target
        return residual if self.scale is None else residual * self.scale

    def jacobian(self, p):
        import numpy as np
        self.jacobians += 1
        key = np.asarray(p, dtype=np.float64).tobytes()
        if self._last is None or self._last[0] != key:
            self(p)
            self.evaluations -= 1   # not one that scipy asked for
        matrix = np.column_stack([self._last[1][n] for n in self.names])
        return matrix if self.scale is None else matrix * self.scale[:, None]


def _point(names, p):
    return ', '.join(f'{n}={float(v):.6g}' for n, v in zip(names, p))


def fit(graph, columns, target, start, weights=None, loss='linear', f_scale=1.0,
        max_evaluations=None):
    """Fit `graph` to `target` over the rows of `columns` ({input: array, or a
    number for every row}), varying the parameters of `start` ({name: value},
    in order); a FitResult. `weights` multiply each row's squared residual.
    Raises NumericalError where the model is not finite where the fit stops,
    UsageError for
    weights that are not positive or fewer rows than parameters."""
    import warnings

    import numpy as np
    from scipy.optimize import least_squares
    names = list(start)
    if loss not in LOSSES:
        raise UsageError(f"unknown loss '{loss}' (choose from {', '.join(LOSSES)})")
    if weights is not None and not (np.isfinite(weights).all() and (weights > 0).all()):
        raise UsageError('every weight must be a positive number')
    residuals = Residuals(graph, names, columns, target, weights)
    if residuals.rows <= len(names):
        raise UsageError(f'{residuals.rows} rows cannot fit {len(names)} parameters: a fit needs '
                         'more rows than parameters')
    x0 = np.array([start[n] for n in names], dtype=np.float64)
    residuals(x0)   # scipy takes no start where the model is not finite
    residuals.evaluations -= 1
    if residuals.last_not_finite is not None:
        raise NumericalError(f'{residuals.last_not_finite} at the start, {_point(names, x0)}: '
                             'start where the model is finite')
    method = 'lm' if loss == 'linear' else 'trf'   # MINPACK's has no robust loss
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')   # scipy's warnings repeat its message
        found = least_squares(residuals, x0, jac=residuals.jacobian, method=method, loss=loss,
                              f_scale=f_scale, x_scale='jac', ftol=TOLERANCE, xtol=TOLERANCE,
                              gtol=TOLERANCE, max_nfev=max_evaluations)
    r = residuals(found.x)   # then the Jacobian there is the one this pass gave
    if residuals.last_not_finite is not None:
        raise NumericalError(f'the fit stopped where {residuals.last_not_finite}, at '
                             f'{_point(names, found.x)}: start nearer the data')
    jacobian = residuals.jacobian(found.x)
    rss = float(r @ r)
    dof = residuals.rows - len(names)
    covariance = _covariance(np, jacobian) * (rss / dof)
    errors = np.sqrt(np.diag(covariance))
    with np.errstate(all='ignore'):
        correlation = covariance / np.outer(errors, errors)
    np.fill_diagonal(correlation, np.where(np.isfinite(errors) & (errors > 0), 1.0, np.nan))
    # status 0 is the evaluation limit; below 0, bad input (never here)
    converged = found.status > 0 and bool(np.isfinite(found.x).all())
    why = str(found.message).rstrip('.')
    return FitResult(dict(zip(names, map(float, found.x))), dict(zip(names, map(float, errors))),
                     rss, dof, residuals.rows, covariance, correlation,
                     residuals.evaluations - 1, residuals.jacobians - 1, converged, why,
                     residuals.first_not_finite)


def _covariance(np, jacobian):
    """(JᵀJ)⁻¹ by the SVD of J, as scipy's curve_fit: inf where J is rank
    deficient, so an error that cannot be had is not a number made up."""
    _, s, vt = np.linalg.svd(jacobian, full_matrices=False)
    keep = s > np.finfo(float).eps * max(jacobian.shape) * s[0]
    if not keep.all():
        return np.full((jacobian.shape[1],) * 2, np.inf)
    return (vt.T / s ** 2) @ vt
