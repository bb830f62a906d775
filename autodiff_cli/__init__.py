"""adgrad: evaluate and differentiate expressions by reverse-mode automatic differentiation.

    >>> from autodiff_cli import lower, forward, backward
    >>> graph = lower('x*y*z')
    >>> values = forward(graph, {'x': 2, 'y': 3, 'z': 4})
    >>> values[graph.output], backward(graph, values)[graph.inputs['x']]
    (24.0, 12.0)
"""

__version__ = '0.1.0'

from .errors import AdgradError, NumericalError  # noqa: E402
from .core.passes import backward, forward  # noqa: E402
from .language.lower import constant, lower  # noqa: E402

__all__ = ['AdgradError', 'NumericalError', 'backward', 'constant', 'forward', 'lower']
