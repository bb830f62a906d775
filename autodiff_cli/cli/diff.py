"""`adgrad diff`: the derivative as a formula or as code, printed from the
gradient's own recorded graph (autodiff_cli/derive)."""

import argparse

from ..errors import UsageError
from ..core.graph import is_array_program
from .common import Exit, load_program, wrt_names
from .evaluate import add_input

LANGUAGES = ('adgrad', 'numpy', 'c', 'latex')

EXAMPLES = """examples:
  adgrad diff 'x^2*sin(x)'                    # d_x = x^2*cos(x) + 2*sin(x)*x
  adgrad diff -f samples/logistic.ad --wrt w1,b
  adgrad diff 'sin(x)*exp(x)' --order 4       # the 4th derivative
  adgrad diff -f f.ad --wrt x | adgrad eval - x=1.5    # the same number as grad
  adgrad diff 'tanh(w*x + b)' --lang numpy > f.py   # value, gradient: arrays
  adgrad diff 'tanh(w*x + b)' --lang c     # C99: f(w, x, b, *value, *grad)
  adgrad diff 'atan(x/y)' --lang latex"""


def add_arguments(parser, command):
    parser.usage = 'adgrad diff [options] (EXPR | -f FILE) [--wrt X,Y] [--order K] [--lang L]'
    parser.epilog = EXAMPLES
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    add_input(parser)
    parser.add_argument('--wrt', metavar='X,Y',
                        help='differentiate with respect to these variables (default: every '
                             'variable, sorted by name)')
    parser.add_argument('--order', type=positive, default=1, metavar='K',
                        help='the K-th derivative with respect to one variable (default 1)')
    parser.add_argument('--lang', choices=LANGUAGES, default='adgrad',
                        help="adgrad (the default: a program that `adgrad eval` reads back), "
                             'numpy (a vectorised function returning the value and the '
                             'gradient), c (C99 with math.h) or latex (one display line each)')


def positive(text):
    # isdigit() alone takes '٣' (and int() reads it as 3): ASCII digits only.
    if not (text.isascii() and text.isdigit()) or int(text) < 1:
        raise argparse.ArgumentTypeError(f"'{text}' is not a positive whole number")
    return int(text)


def variables(graph, wrt, what='differentiate'):
    """--wrt's names in its order, else every variable sorted by name; a
    derivative needs at least one."""
    if not graph.inputs:
        raise UsageError(f'the expression has no variables to {what} with respect to')
    return wrt_names(graph, wrt)


def run(args, env):
    from ..derive.printers import derivative_text

    graph, words = load_program(args, env)
    if words:
        raise UsageError(f"diff prints a formula and takes no values ('{words[0]}'); "
                         'to evaluate it, pipe it to adgrad eval')
    names = variables(graph, args.wrt)
    if args.order > 2 and len(names) != 1:
        raise UsageError(f'--order {args.order} differentiates with respect to one variable: '
                         'give it with --wrt X (--order 2 takes several, for the mixed partials)')
    if is_array_program(graph):
        from ..derive.array_printers import array_derivative_text
        env.stdout.write(array_derivative_text(graph, names, args.order, args.lang))
        return Exit.OK
    env.stdout.write(derivative_text(graph, names, args.order, args.lang))
    return Exit.OK
