"""adgrad: evaluate and differentiate expressions by reverse-mode automatic differentiation.

    >>> from autodiff_cli import lower, forward, backward
    >>> graph = lower('x*y*z')
    >>> values = forward(graph, {'x': 2, 'y': 3, 'z': 4})
    >>> values[graph.output], backward(graph, values)[graph.inputs['x']]
    (24.0, 12.0)
"""

__version__ = '0.1.0'

# Where each name of the library lives. Each is imported on first use (PEP
# 562), not here: the command line imports this package first, and commands
# that need no library (--help, --version, completion) never load it.
_HOMES = {
    'AdgradError': 'errors', 'NumericalError': 'errors',
    'backward': 'core.passes', 'forward': 'core.passes',
    'constant': 'language.lower', 'lower': 'language.lower',
    'Program': 'program',
}
__all__ = sorted(_HOMES)


def __getattr__(name):
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(__import__(f'{__name__}.{home}', fromlist=(name,)), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted([*globals(), *_HOMES])
