"""Non-linear least squares: a model of numbers fitted to a data set's target
column, with the exact Jacobian of its residuals.

The residual of row i is sqrt(w_i) (model_i - y_i). Its Jacobian is the
gradient of the model with respect to each parameter at every row, which
the batch engine (core/batch.py) computes for all rows at once: the
derivatives gnuplot's `fit` takes by finite differences are exact here.
scipy.optimize takes the steps (the optimize extra): MINPACK's
Levenberg-Marquardt through leastsq, as curve_fit does, or least_squares'
trust region where a robust loss needs one. Standard errors are sqrt of the
diagonal of (JᵀJ)⁻¹ s², with s² = RSS / (rows - parameters), as NIST's
certified values and gnuplot's "asymptotic standard errors" are computed.
"""

from collections import namedtuple

from ..errors import NumericalError, UsageError

LOSSES = ('linear', 'soft_l1', 'huber', 'cauchy', 'arctan')
EVALUATIONS = 1000   # per parameter: NIST's Bennett5 needs 762 from its first start
TOLERANCE = 1e-14   # ftol, xtol and gtol: NIST certifies 11 digits, a fit should reach 9

# parameters, errors: {name: value}; rss: the weighted residual sum of squares;
# dof: rows - parameters; covariance, correlation: matrices in parameter order;
# evaluations: of the residuals, jacobians: of the Jacobian; why: why it stopped.
# not_finite: the first point scipy tried where the model was not finite, or None.
FitResult = namedtuple('FitResult', 'parameters errors rss dof rows covariance correlation '
                                    'evaluations jacobians converged why not_finite')


class Residuals:
    """The residuals and their Jacobian at a vector of the parameters, over
    every row. One batch pass gives both, and the last point's are kept:
    MINPACK asks for the Jacobian only where it has just had the residuals."""

    def __init__(self, graph, names, columns, target, weights=None):
        import numpy as np
        self.graph, self.names, self.columns = graph, list(names), dict(columns)
        self.target = np.asarray(target, dtype=np.float64)
        self.rows = self.target.size
        self.scale = None if weights is None else np.sqrt(np.asarray(weights, dtype=np.float64))
        # Row 0 the residuals, row 1 + k their derivative by names[k]: the
        # layout MINPACK reads with col_deriv, rewritten in place at each point.
        self._out = np.empty((1 + len(self.names), self.rows))
        self._key = None    # the bytes of the point _out holds
        self.not_finite, self.first_not_finite, self.last_not_finite = 0, None, None

    def at(self, p):
        """(residuals, Jacobian rows): arrays of shape (rows,) and (parameters,
        rows), valid until the next point. Where the model or its gradient is
        not finite they are given to scipy as they are (its step then
        shortens), and the first such point is kept to be named."""
        import numpy as np

        from ..core.batch import run_batch
        key = np.asarray(p, dtype=np.float64).tobytes()
        if key != self._key:
            point = {**self.columns, **{n: float(v) for n, v in zip(self.names, p)}}
            self._key = None    # until _out is whole again
            _, _, bad = run_batch(self.graph, point, self.rows, self.names, out=self._out)
            self._out[0] -= self.target
            if self.scale is not None:
                self._out *= self.scale
            self._key = key
            self._note(bad, p)
        return self._out[0], self._out[1:]

    def _note(self, bad, p):
        if bad is None:
            self.last_not_finite = None
            return
        node, count = bad
        nodes = len(self.graph.nodes)
        what = (f'the derivative by {self.names[node - nodes]}' if node >= nodes else
                f'{self.graph.text(node, 60) or self.graph.label(node)} (node {node})')
        self.not_finite += 1
        self.first_not_finite = self.first_not_finite or (
            f'{what} is not finite in {count} of {self.rows} rows at {_point(self.names, p)}')
        self.last_not_finite = f'{what} is not finite in {count} of {self.rows} rows'

    def __call__(self, p):
        return self.at(p)[0]

    def jacobian_rows(self, p):
        """∂residual_i/∂p_k at [k, i]: leastsq's col_deriv layout, without a copy."""
        return self.at(p)[1]

    def jacobian(self, p):
        """The Jacobian as least_squares takes it, rows by parameters: a copy,
        as its robust losses rescale it in place."""
        return self.at(p)[1].T.copy()


def _point(names, p):
    return ', '.join(f'{n}={float(v):.6g}' for n, v in zip(names, p))


# Why a fit stopped, by least_squares' status. MINPACK's 6 to 8 stop where a
# tolerance this small is out of float64's reach: the sum of squares cannot be
# lowered but by rounding errors, so the fit has converged as far as it can.
STOPS = {0: 'the evaluations reached the limit, {limit}',
         1: 'the gradient of the sum of squares is below the tolerance (gtol)',
         2: 'the sum of squares changes by less than the tolerance (ftol)',
         3: 'the parameters change by less than the tolerance (xtol)',
         4: 'the sum of squares and the parameters change by less than the tolerance '
            '(ftol and xtol)',
         6: 'the sum of squares cannot be lowered in float64',
         7: 'the parameters cannot be improved in float64',
         8: 'the residuals are orthogonal to the Jacobian to float64 precision'}
FROM_MINPACK = {1: 2, 2: 3, 3: 4, 4: 1, 5: 0, 6: 6, 7: 7, 8: 8}


def fit(graph, columns, target, start, weights=None, loss='linear', f_scale=1.0,
        max_evaluations=None):
    """Fit `graph` to `target` over the rows of `columns` ({input: array, or a
    number for every row}), varying the parameters of `start` ({name: value},
    in order); a FitResult. `weights` multiply each row's squared residual.
    `max_evaluations` of the residuals: EVALUATIONS per parameter unless given.
    Raises NumericalError where the model is not finite where the fit stops,
    UsageError for weights that are not positive or fewer rows than parameters."""
    import warnings

    import numpy as np
    from scipy.optimize import least_squares, leastsq
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
    residuals.at(x0)   # scipy takes no start where the model is not finite
    if residuals.last_not_finite is not None:
        raise NumericalError(f'{residuals.last_not_finite} at the start, {_point(names, x0)}: '
                             'start where the model is finite')
    limit = max_evaluations or EVALUATIONS * len(names)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')   # scipy's warnings repeat its message
        if loss == 'linear':
            # MINPACK's Levenberg-Marquardt, as curve_fit calls it: leastsq reads
            # the Jacobian rows in place, where least_squares copies them twice.
            x, _, info, _, ier = leastsq(residuals, x0, Dfun=residuals.jacobian_rows,
                                         col_deriv=True, full_output=True, ftol=TOLERANCE,
                                         xtol=TOLERANCE, gtol=TOLERANCE, maxfev=limit)
            status, evaluations, jacobians = FROM_MINPACK.get(ier, -1), info['nfev'], info['njev']
        else:   # MINPACK's has no robust loss: a trust region
            found = least_squares(lambda p: residuals(p).copy(), x0, jac=residuals.jacobian,
                                  method='trf', loss=loss, f_scale=f_scale, x_scale='jac',
                                  ftol=TOLERANCE, xtol=TOLERANCE, gtol=TOLERANCE,
                                  max_nfev=limit)
            x, status, evaluations, jacobians = found.x, found.status, found.nfev, found.njev
    r, rows = residuals.at(x)
    if residuals.last_not_finite is not None:
        raise NumericalError(f'the fit stopped where {residuals.last_not_finite}, at '
                             f'{_point(names, x)}: start nearer the data')
    rss = float(r @ r)
    dof = residuals.rows - len(names)
    covariance, flat = _covariance(np, rows.T)
    covariance *= rss / dof
    errors = np.sqrt(np.diag(covariance))
    with np.errstate(all='ignore'):
        correlation = covariance / np.outer(errors, errors)
    np.fill_diagonal(correlation, np.where(np.isfinite(errors) & (errors > 0), 1.0, np.nan))
    converged = status > 0 and bool(np.isfinite(x).all())
    why = STOPS.get(status, 'scipy stopped the fit for bad input').format(limit=limit)
    if converged and flat.any():
        # A stationary point is not a fit where the parameters are not determined
        # (BoxBOD from NIST's first start: exp(-b2*x) is 0 at every row).
        converged = False
        # Redundant parameters (a*x + b*x) are flat from every start: say so first.
        along = [n for n, f in zip(names, flat) if f]
        them = along[0] if len(along) == 1 else 'them separately'
        along = along[0] if len(along) == 1 else f"a combination of {', '.join(along)}"
        why = (f'it stopped where the sum of squares is flat along {along} (the Jacobian is '
               'singular there, so the parameters are not determined): the model may not '
               f'depend on {them}, or start nearer the data')
    return FitResult(dict(zip(names, map(float, x))), dict(zip(names, map(float, errors))),
                     rss, dof, residuals.rows, covariance, correlation,
                     int(evaluations), int(jacobians or 0), converged, why,
                     residuals.first_not_finite)


def _covariance(np, jacobian):
    """(JᵀJ)⁻¹ by the SVD of J, as scipy's curve_fit: inf where J is rank
    deficient, so an error that cannot be had is not a number made up; and
    which parameters lie along J's null space (a boolean per parameter)."""
    _, s, vt = np.linalg.svd(jacobian, full_matrices=False)
    keep = s > np.finfo(float).eps * max(jacobian.shape) * s[0]
    if not keep.all():
        null = np.abs(vt[~keep]).max(axis=0)
        return np.full((jacobian.shape[1],) * 2, np.inf), null > 1e-3 * null.max()
    return (vt.T / s ** 2) @ vt, np.zeros(jacobian.shape[1], dtype=bool)
