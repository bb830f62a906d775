"""`adgrad render`'s command line: its options, then render.run_render does the work.

(The command's logic and files live in render.py; this module is what the
registry in context.py loads, and only declares the options.)
"""

import argparse

from ..language.lower import MAX_NODES as MOST_NODES   # no graph is larger
from .context import Choice
from .evaluate import add_input
from .render import FORMATS, MAX_NODES, MAX_STEP_NODES, add_picture_options, run_render

PictureFormat = Choice('PictureFormat', {word.upper(): word for word in FORMATS})


class Pass(Choice):
    FORWARD = 'forward'     # values and forward arrows
    BACKWARD = 'backward'   # values, gradients and the backward arrows


_EXAMPLES = """examples:
  adgrad render 'x*y*z' x=2 y=3 z=4 -o product.svg    # values and gradients
  adgrad render 'x*y*z' x=2 y=3 z=4 --pass forward -o forward.png
  adgrad render -f samples/blocks.ad -o blocks.svg    # a block call, a box
  adgrad render 'x*y*z' x=2 y=3 z=4 --steps steps   # open steps/index.html
  adgrad render 'tanh(w*x + b)' --format text   # no values: the structure
  adgrad render 'x*y*z' x=2 y=3 z=4 -o - --format dot | dot -Tpng > product.png

colours: blue is the forward pass (arrows, values); cyan dashed arrows carry
gradients backward; green nodes have a known gradient ∂f/∂node (bright green:
the node a step has just finished). Inputs are ovals, constants grey boxes,
the output has a double border."""


def add_arguments(parser, command):
    parser.usage = 'adgrad render [options] (EXPR | -f FILE) [NAME=VALUE ...] [-o FILE]'
    parser.epilog = _EXAMPLES
    add_input(parser)
    parser.add_argument('-o', '--output', metavar='FILE',
                        help="where to write the picture; '-' is standard output, the default "
                             'when that is not a terminal')
    parser.add_argument('--format', type=PictureFormat.parse, choices=list(PictureFormat),
                        default=None,
                        help="svg, png, pdf, dot (Graphviz's source) or text (a table); "
                             "default: from FILE's extension, else svg")
    parser.add_argument('--pass', dest='mode', type=Pass.parse, choices=list(Pass), default=None,
                        help='forward: values only; backward: values, gradients and the '
                             'backward flow (the default when every variable has a value; '
                             'with none, the structure alone is drawn)')
    parser.add_argument('--rankdir', choices=('LR', 'TB'), default=None,
                        help='lay the graph out left to right or top to bottom (default: left '
                             'to right, or top to bottom where only that fits a slide)')
    parser.add_argument('--steps', metavar='DIR',
                        help='also write the backward pass to DIR as numbered SVG frames, one '
                             'per node, and an index.html that steps through them')
    parser.add_argument('--unroll', action='store_true',
                        help='draw a small array program (60 numbers at most) entry by entry: '
                             'a network neuron by neuron')
    parser.add_argument('--data', metavar='FILE',
                        help="bind each column of FILE (CSV, TSV, JSON Lines or Parquet) that "
                             'names a variable as a vector of all its rows, as grad --data does')
    parser.add_argument('--max-nodes', type=node_count, metavar='N', default=None,
                        help=f'refuse to lay out a larger graph (default {MAX_NODES}, and '
                             f'{MAX_STEP_NODES} with --steps, which lays it out once per node)')
    parser.add_argument('--memory', action='store_true',
                        help="mark the values the backward pass keeps, and their bytes")
    parser.add_argument('--checkpoint', metavar='POLICY', default=None,
                        help='draw gradient checkpointing: sqrt or every:K; the checkpoints '
                             'kept, the segments computed again (with --steps, as they are)')
    add_picture_options(parser)


def node_count(text):
    # Bounded also because dot's timeout grows with --max-nodes: past what the
    # clock can represent, it overflowed (exit 70).
    if not (text.isascii() and text.isdigit()) or not 1 <= int(text) <= MOST_NODES:
        raise argparse.ArgumentTypeError(
            f"'{text}' is not a whole number from 1 to {MOST_NODES:,}")
    return int(text)


def run(args, env):
    args.format_given = args.format is not None
    return run_render(args, env)
