"""A program's inputs from its defaults and the command line's bindings, and
how a node is named in a message: shared by single points and batches, and
apart from computations.py so that a single point's start-up does not load it."""

import re

from ..errors import AdgradError, UsageError

# Patterns as text, compiled (by re's cache) only for a value that needs one:
# compiling them costs more than the rest of reading x=2 y=3 (see _is_number).
_FLOAT = r'[+-]?((\d+\.?\d*|\.\d+)([eE][+-]?\d+)?|inf|infinity|nan)'
_STATEMENT = r'(?<![<>=!])=(?!=)|;'   # x=y=2, x=1;2: a program, not a value


def input_values(graph, bindings, warn):
    """The program's defaults, then the command line's bindings of its inputs;
    a binding of no input is a warning, of a computed name an error."""
    for name in bindings:
        if name not in graph.inputs:
            if any(node.name == name for node in graph.nodes):
                raise UsageError(f"cannot bind '{name}': the program computes it")
            warn(f"'{name}' is not used by the expression")
    values = dict(graph.defaults)
    values.update((k, v) for k, v in bindings.items() if k in graph.inputs)
    return values


def where(graph, i):
    return f'{graph.text(i, 60) or graph.label(i)} (node {i})'


# ---- reading a program and its bindings: every command, and Program ----

def lower_program(source, note):
    """The program's graph; `note(text)` is called with each thing lowering
    noted (a constant bound as a variable, numbers bound where inputs were meant)."""
    from ..language.lower import lower
    graph = lower(source)
    for text in graph.notes:
        note(text)
    return graph


def parse_bindings(words, graph=None):
    """{name: value} from NAME=VALUE words: a number, a constant expression,
    an array literal, or @FILE for an array in a file. `pi` and `e` can be
    bound only where the program made them its own variables."""
    from ..language.lower import constant
    from ..core.primitives import CONSTANTS
    bindings = {}
    for word in words:
        name, equals, text = word.partition('=')
        if not (equals and name.isascii() and name.isidentifier()):   # [A-Za-z_][A-Za-z0-9_]*
            raise UsageError(f"bad binding '{word}': write NAME=VALUE, such as x=2 or x=pi/4")
        if not text.strip():
            raise UsageError(f"bad binding '{word}': no value after '='")
        if ('=' in text or ';' in text) and re.search(_STATEMENT, text):
            raise UsageError(f"bad binding '{word}': the value must be one expression, "
                             'such as x=2 or x=pi/4')
        if name in CONSTANTS and (graph is None or name not in graph.inputs):
            raise UsageError(f"cannot bind the constant '{name}'")
        if name in bindings:
            raise UsageError(f"'{name}' is bound twice")
        if _is_number(text.strip()):
            bindings[name] = float(text)  # fast and exact; also inf and nan, for probing edges
            continue
        if text.startswith('@'):   # W=@w.npy: an array from a file
            from .array_files import read_array
            bindings[name] = read_array(text[1:])
            continue
        special = _with_infinities(text)
        if special is not None:
            bindings[name] = special
            continue
        try:
            bindings[name] = constant(text)
        except AdgradError as error:
            if re.fullmatch(r'\s*[^\s.]([^.]|\.\d)*\s*\.\.\s*[^\s.]([^.]|\.\d)*', text):   # -1..1
                raise UsageError(f"{word} is a range, which only adgrad plot takes: bind {name} "
                                 'to one value here') from None
            raise AdgradError(f'in {name}=: {error.message}', text, error.pos) from None
    return bindings


def _with_infinities(text):
    """x=[1, inf, -inf, nan]: an array literal of numbers with inf or nan in
    it, as a scalar binding may be (the language has no constant inf); None
    for any other text, which the language reads."""
    if '[' not in text or not re.search(r'(?i)\b(inf|infinity|nan)\b', text):
        return None
    import json
    spelled = re.sub(r'(?i)\b(?:inf|infinity)\b', 'Infinity', text)
    spelled = re.sub(r'(?i)\bnan\b', 'NaN', spelled)
    try:
        data = json.loads(spelled)
        import numpy as np
        value = np.array(data, dtype=np.float64)
    except (ValueError, TypeError, RecursionError):
        return None   # the language's own message says what is wrong
    return value if 1 <= value.ndim <= 3 and value.size else None


def _is_number(text):
    """Whether text (stripped) is a decimal number, inf, infinity or nan, as
    _FLOAT spells them. For ASCII text without '_', that is exactly what
    float() reads; other text (digits of other scripts, 1_000) takes the
    pattern."""
    if text.isascii() and '_' not in text:
        try:
            float(text)
        except ValueError:
            return False
        return True
    return re.fullmatch(_FLOAT, text, re.I) is not None


