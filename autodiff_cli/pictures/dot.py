"""Running Graphviz's `dot`, and choosing the way of drawing that fits a slide.

The one place the pictures run a program: `dot` reads DOT text on its stdin and
writes the picture's bytes to its stdout; nothing is read or written on disk.
`render`'s command line and the library's Program (program.py) both lay out
through here, so the same program gives them the same picture.
"""

from ..errors import AdgradError

DOT_SECONDS = 60   # a backstop should a size estimate be wrong: dot is stopped after this long
FIT_SECONDS = 10   # dot's time for each way of drawing a picture that fitted() tries
TALLEST = 3        # a picture that fits a slide's width may be this many times as tall
FIT_NODES = 150    # up to this layout size, dot is fast enough to be asked more than once
PNG_DPI = '144'    # crisp on slides and high-density screens

# As the README's table says it, a platform each
INSTALL = ("Graphviz's dot program was not found: install Graphviz (sudo apt install graphviz, "
           'sudo dnf install graphviz, brew install graphviz, '
           'conda install -c conda-forge graphviz, or winget install graphviz)')


def run_dot(digraph, fmt, seconds=DOT_SECONDS, ways_out=None):
    """The picture's bytes: DOT text as is for 'dot', else what `dot -Tfmt` makes
    of it. AdgradError if dot is missing, fails, or runs past `seconds`;
    `ways_out` (', or use --format dot') ends the messages that need a way on."""
    import shutil
    import subprocess

    if fmt == 'dot':
        return digraph.source.encode('utf-8')
    program = shutil.which('dot')
    if program is None:
        raise AdgradError(INSTALL + (ways_out or ''))
    try:
        done = subprocess.run([program, f'-T{fmt}'], input=digraph.source.encode('utf-8'),
                              capture_output=True, timeout=seconds)
    except subprocess.TimeoutExpired:
        raise AdgradError(f'dot did not finish in {seconds:.0f} s and was stopped'
                          + (ways_out or '; draw a smaller graph')) from None
    except OSError as error:
        raise AdgradError(f'cannot run {program}: {error.strerror}') from None
    if done.returncode != 0:
        detail = done.stderr.decode('utf-8', 'replace').strip().splitlines()
        raise AdgradError('dot failed' + (f': {detail[0]}' if detail else ''))
    return done.stdout


def fitted(draw, look, rankdir=None, seconds=FIT_SECONDS, compact=True):
    """The picture that fits a 16:9 slide, measured rather than guessed.
    `draw(rankdir, look)` styles one scene. In order: as drawn; wrapped onto
    rows; top to bottom, unless `rankdir` was given; folded into strips; then
    each again compact, and merged; where `compact` is False (block boxes, whose
    calls' steps a compact picture names by the block's parameters), only if
    that fits. The first that fits a slide whole; else the least tall of those a slide
    wide and at most TALLEST times as tall; else the one that needs the least
    shrinking (a tangle folded into a strip a hundred inches tall helps no one)."""
    from .layout import picture_size
    from .style import SLIDE_HEIGHT, SLIDE_WIDTH
    direction = rankdir or 'LR'
    ways = [(direction, dict(width=None), False), (direction, dict(fold=False), True)]
    if rankdir is None:
        ways.append(('TB', dict(width=None), False))
    ways.append((direction, dict(fold=True), True))
    tries = [(d, look._replace(**changes), again) for d, changes, again in ways]
    # compact, then also each unnamed step drawn in its use
    tries += [(d, look._replace(compact=True, merged=merged, **changes), again)
              for merged in (False, True) for d, changes, again in ways]
    tall = best = None
    seen = set()
    while tries and len(seen) < 16:
        direction, dressed, again = tries.pop(0)
        whole_only = dressed.compact and not compact
        picture = draw(direction, dressed)
        if picture.source in seen:
            continue
        seen.add(picture.source)
        try:   # a step series' other frames, with other labels, may come out larger
            sizes = [picture_size(run_dot(digraph, 'svg', seconds), 'svg') or (0.0, 0.0)
                     for digraph in [picture.digraph, *getattr(picture, 'also', ())]]
        except AdgradError:   # dot failed or was slow on this way of drawing it: the next
            continue
        width, height = max(size[0] for size in sizes), max(size[1] for size in sizes)
        if width <= SLIDE_WIDTH and height <= SLIDE_HEIGHT:
            return picture
        if whole_only:
            continue
        shrink = max(width / SLIDE_WIDTH, height / SLIDE_HEIGHT)
        if width <= SLIDE_WIDTH and height <= TALLEST * max(width, SLIDE_HEIGHT) and (
                tall is None or shrink < tall[0]):
            tall = (shrink, picture)
        if best is None or shrink < best[0]:
            best = (shrink, picture)
        if again and width > SLIDE_WIDTH:   # once more, narrower by what dot overshot
            narrower = dressed.width * SLIDE_WIDTH / width * 0.97
            tries.insert(0, (direction, dressed._replace(width=narrower), False))
    if tall is not None:
        return tall[1]
    return best[1] if best is not None else draw(rankdir or 'LR', look)


def frame_fit(graph, look, rankdir=None):
    """How a step series chooses its one layout (fitted, from its last frame),
    where a whole picture would be fitted: no size given, and a graph dot lays
    out fast; else None, each frame as drawn."""
    if look.size is not None or len(graph.nodes) > FIT_NODES:
        return None
    return lambda draw: fitted(draw, look, rankdir)
