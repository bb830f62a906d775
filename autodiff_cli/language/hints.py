"""What to write instead, for the syntax errors a newcomer commonly makes.

parse.py calls these on its error path only, so a good program never pays
for them. Each reads the text around the error (the token found there, the
one before it, the brackets still open) and returns the end of the message,
'; write ...', or '' where no common mistake fits.
"""
import re
import unicodedata

from ..core.primitives import FUNCTIONS

# What a newcomer copies from a book or a keyboard, as adgrad spells it.
SPELLED = {'²': '^2', '³': '^3', 'π': 'pi', '×': '*', '·': '*', '⋅': '*', '∗': '*',
           '÷': '/', '−': '-', '–': '-', '√': 'sqrt(...)', '∞': 'inf', '&': 'and'}
_SHOWN = 40        # longest piece of the program a hint quotes; past it, a placeholder
_LOOKBACK = 256    # characters read back for the token before the error
_OPERAND = ('NUMBER', 'NAME', 'RPAR', 'RSQB')
_CLOSERS = {')': '(', ']': '[', '}': '{'}


def character_hint(text, pos):
    """The hint for a character that starts no token of the language."""
    c = text[pos]
    if c in SPELLED:
        return f"; write '{SPELLED[c]}' instead"
    if c == '|':
        if text.startswith('||', pos):
            return "; write 'or' instead"
        close = text.find('|', pos + 1)
        inner = text[pos + 1:close] if close > 0 else ''
        return f'; write {_quote(f"abs({inner})", "abs(x)")} for {_quote(f"|{inner}|", "|x|")}'
    if c == '!':
        return "; there is no factorial in adgrad (not equal is '!=')"
    if c == '?':
        return '; write ' + _conditional(text, pos)
    if not c.isascii() and unicodedata.category(c)[0] in 'LN':
        word = (re.search(r'\w*$', _tail(text, pos)).group()
                + re.match(r'\w*', text[pos:pos + _LOOKBACK]).group())
        ascii_word = _ascii(word) if len(word) <= _SHOWN else ''
        if word.isdigit() and ascii_word:   # ١٢ or ５: a number, in other digits
            return f'; digits are ASCII: write {ascii_word}'
        instead = f': write {ascii_word} for {word}' if ascii_word else ''
        return f'; names use ASCII letters, digits and _{instead}'
    plain = unicodedata.normalize('NFKC', c)
    if plain != c and plain.isascii() and plain.isprintable():   # full-width '＋', '（'
        return f"; write '{plain}' instead"
    return ''


def syntax_hint(parser, text, token, expected):
    """The hint for `token` (kind, start, end, text) where the parser expected
    one of the terminals `expected`; '' if no common mistake fits."""
    kind, start, _, value = token
    wanted = {parser.strings.get(t, t) for t in expected}
    prev = _previous(parser, text, start)
    before = prev[0] if prev else None
    still = opened(text, start)
    inner = still[-1] if still else None
    if '{' in wanted and kind != 'LBRACE' and re.search(r'\bfor\b', _statement(text, start)):
        return "; the loop's body goes in { }: " + loop_spelling(text, start)
    if kind in ('RPAR', 'RSQB'):
        if not still or text[inner] != _CLOSERS[value]:
            return f"; there is no '{_CLOSERS[value]}' for this '{value}'"
    if kind in ('RPAR', 'COMMA') and still and text[inner] == '(':
        called = re.search(r'([A-Za-z_]\w*)\s*$', _tail(text, inner))
        called = called.group(1) if called else None
        if called == 'if' and (kind == 'RPAR' or text.count(',', inner, start) >= 2):
            return '; if takes 3 arguments: if(condition, then, else)'
        if kind == 'RPAR' and before == 'LPAR' and called:
            return '; ' + _arguments(called)
    if kind == 'COMPARE' and before in _OPERAND:
        return '; comparisons do not chain: write ' + _chain(text, start, value)
    if kind == 'SLASH' and '//' in text[max(0, start - 1):start + 2]:
        return "; comments start with '#'"
    declared = re.search(r'\binput\b[^;\n]*?([A-Za-z_]\w*)\s*$', _tail(text, start))
    if 'EQUAL' in expected and declared:   # input x; with no default
        name = declared.group(1) if len(declared.group(1)) <= _SHOWN else 'x'
        return (f'; an input needs a default (input {name} = 1), or no declaration at all: '
                'a name the program never binds is an input')
    if kind == 'COMMA' and not still:
        if before == 'NUMBER' and re.match(r',[0-9]', text[start:start + 2]) and prev[3].isdigit():
            digits = re.match(r'[0-9]+', text[start + 1:start + 1 + _SHOWN]).group()
            return (f"; a decimal point is '.': write {prev[3]}.{digits} (and statements are "
                    "separated by ';')")
        if not re.search(r'\binput\b', _statement(text, start)):
            return "; statements are separated by ';' or new lines"
    if kind in ('NAME', 'NUMBER', 'LPAR') and before in _OPERAND:
        return _juxtaposed(text, prev, token, inner)
    return ''


def loop_spelling(text, start):
    """`for i in 0..3 { ... }`, from the loop head before `start` where it
    reads one (a Python `range(3)` too), else with i and N."""
    head = re.search(r'\bfor\s+([A-Za-z_]\w*)\s+in\s+([^{};\n]*?)\s*:?\s*$', _tail(text, start))
    name, bounds = (head.group(1), head.group(2)) if head and len(head.group(1)) <= _SHOWN \
        else ('i', '')
    python = re.fullmatch(r'range\(\s*([^,()]+?)\s*(?:,\s*([^,()]+?)\s*)?\)?', bounds)
    if python:
        bounds = f'{python.group(1)}..{python.group(2)}' if python.group(2) else \
            f'0..{python.group(1)}'
    if not re.fullmatch(r'[^.]+\.\.[^.]+', bounds) or len(bounds) > _SHOWN:
        bounds = '0..N'
    return f'for {name} in {bounds} {{ ... }}'


def _juxtaposed(text, prev, token, inner):
    """Two operands side by side: a number's other spelling (0x10, 1_000), a
    call without parentheses (sin x), an array's missing commas, or a product."""
    kind, start, _, value = token
    before, prev_start, prev_end, prev_text = prev
    if inner is not None and text[inner] == '[':
        return "; separate entries with ','"
    called = re.search(r'([A-Za-z_]\w*)\s*$', _tail(text, inner)) if inner is not None else None
    if called and text[inner] == '(' and (called.group(1) in ('min', 'max') or getattr(
            FUNCTIONS.get(called.group(1)), 'arity', 1) > 1):
        return "; separate arguments with ','"
    if before == 'NUMBER' and prev_end == start and kind == 'NAME':
        radix = re.fullmatch(r'[xX][0-9a-fA-F]+|[bB][01]+|[oO][0-7]+', value)
        if prev_text == '0' and radix:
            named = {'x': 'hexadecimal', 'b': 'binary', 'o': 'octal'}[value[0].lower()]
            decimal = int(prev_text + value, 0) if len(value) <= 16 else 'it in decimal'
            return f'; {named} is not read: write {decimal}'
        if value.startswith('_'):
            spelled = re.match(r'[0-9_.]*', text[prev_start:prev_start + _SHOWN + 1]).group()
            spelled = spelled.replace('_', '') if len(spelled) <= _SHOWN else 'the number'
            return f"; write {spelled}, without '_'"
    block = rf'(?:^|[;\n])\s*{re.escape(prev_text)}\s*\([^()]*\)\s*=(?!=)'   # f(y) = ...
    if before == 'NAME' and kind != 'LPAR' and len(prev_text + value) <= _SHOWN and (
            prev_text in FUNCTIONS or re.search(block, text)):
        return f'; write {prev_text}({value}) to call {prev_text}'
    left = _operand_before(text, prev_end)
    right = _group_after(text, start) if kind == 'LPAR' else value
    if left == '':
        return ''
    if left is None or right is None or len(left + right) > 2 * _SHOWN:
        return '; write * between the two for a product'
    return f'; write {left}*{right} for a product'


def _arguments(name):
    """How many arguments `name` takes, for a call with none."""
    row = FUNCTIONS.get(name)
    if row is None:
        return f'{name}() needs its arguments' if len(name) <= _SHOWN else 'a call needs arguments'
    count = f"{row.arity} argument{'s' if row.arity != 1 else ''}"
    extra = ' (or 2: log(x, base))' if name == 'log' else (
        ' or more' if name in ('min', 'max') else '')
    return f'{name}() takes {count}{extra}'


def _chain(text, start, op):
    """`a < b and b < c` for the chain `a < b < c`, whose second comparison
    starts at `start`; with placeholders where the pieces are not plain."""
    left = _statement(text, start, stop='([,{')
    left = re.split(r'\b(?:and|or|not)\b|(?<![<>=!])=(?!=)', left)[-1]
    right = re.match(r'[^;\n,)\]}]*', text[start + len(op):start + _LOOKBACK]).group()
    right = re.split(r'\b(?:and|or)\b', right)[0].strip()
    first = re.fullmatch(r'\s*(.+?)\s*(<=|>=|==|!=|<|>)\s*(.+?)\s*', left)
    if first and right and len(left) + len(right) <= 2 * _SHOWN:
        a, op1, b = first.groups()
        return f'{a} {op1} {b} and {b} {op} {right}'
    return f'a < b and b {op} c'


def _conditional(text, pos):
    """`if(c, a, b) for c ? a : b`, from the text around the '?' at `pos`."""
    condition = _statement(text, pos, stop='([,{')
    condition = re.split(r'(?<![<>=!])=(?!=)', condition)[-1].strip()
    rest = re.match(r'\?([^:;\n]*):([^;\n,)\]}]*)', text[pos:pos + _LOOKBACK])
    if rest and condition and all(p.strip() for p in rest.groups()) and \
            len(condition) + len(rest.group()) <= 2 * _SHOWN:
        a, b = (p.strip() for p in rest.groups())
        return f'if({condition}, {a}, {b}) for {condition} ? {a} : {b}'
    return 'if(c, a, b) for c ? a : b'


def _statement(text, end, stop=''):
    """The text from the start of the statement (or the innermost bracket still
    open, or a character of `stop` outside brackets) up to `end`."""
    depth, i = 0, end - 1
    while i >= 0 and end - i <= _LOOKBACK:
        c = text[i]
        if c in ')]}':
            depth += 1
        elif c in '([{' and depth:
            depth -= 1
        elif c in ';\n' or (depth == 0 and c in stop):
            break
        i -= 1
    return text[i + 1:end]


def opened(text, end, brackets='([{'):
    """Where the `brackets` still open before `end` are, innermost last,
    skipping comments; a closer that matches none is left out."""
    closers = ''.join(c for c, o in _CLOSERS.items() if o in brackets)
    found = []
    for piece in re.finditer(r'[()\[\]{}]|#[^\n]*', text[:end]):
        c = piece.group()
        if c in brackets:
            found.append(piece.start())
        elif c in closers and found:
            found.pop()
    return found


def _previous(parser, text, start):
    """The token before `start` on its line, as (kind, start, end, text), or None."""
    line = max(text.rfind('\n', 0, start) + 1, start - _LOOKBACK)
    last = None
    for piece in parser.pieces.finditer(text, line, start):
        kind = parser.classify(piece.group())
        if parser.keep.get(kind, True):   # as the lexer keeps them: not white space, comments
            last = (kind[1] if type(kind) is tuple else kind, piece.start(), piece.end(),
                    piece.group())
    return last


def _operand_before(text, end):
    """The operand that ends at `end`: a name, a number, or a bracketed group
    with its function's name; None past _SHOWN characters."""
    if text[end - 1] in ')]':
        depth, i = 0, end - 1
        while i >= max(0, end - _LOOKBACK):
            depth += text[i] in ')]'
            depth -= text[i] in '(['
            if depth == 0:
                break
            i -= 1
        start = i - len(re.search(r'\w*$', _tail(text, max(i, 0))).group())
    else:
        start = end - len(re.search(r'[\w.]*$', _tail(text, end)).group())
    piece = text[max(start, 0):end]
    if '..' in piece:   # a range's bound (0..3) is no number of a product
        return ''
    return piece if 0 < len(piece) <= _SHOWN and '\n' not in piece else None


def _group_after(text, start):
    """The bracketed group that opens at `start`, or None past _SHOWN characters."""
    depth = 0
    for i in range(start, min(len(text), start + _SHOWN)):
        depth += text[i] == '('
        depth -= text[i] == ')'
        if depth == 0:
            group = text[start:i + 1]
            return None if '\n' in group or '#' in group else group
    return None


def _tail(text, end):
    """The text just before `end`: what a search back from there reads, so
    that no search runs over the whole of a long program."""
    return text[max(0, end - _LOOKBACK):end]


def _quote(piece, placeholder):
    return piece if len(piece) <= _SHOWN and '\n' not in piece else placeholder


def _ascii(word):
    """`word` in ASCII letters, digits and _ ('alpha' for 'α', 'x1' for 'x₁'),
    or '' where a character has no such spelling."""
    out = []
    for c in word:
        plain = str(unicodedata.digit(c)) if c.isdecimal() else unicodedata.normalize('NFKC', c)
        if not plain.isascii():
            plain = unicodedata.normalize('NFKD', plain).encode('ascii', 'ignore').decode()
        if not plain:
            greek = re.fullmatch(r'GREEK (SMALL|CAPITAL) LETTER (\w+)',
                                 unicodedata.name(unicodedata.normalize('NFKC', c), ''))
            if greek is None:
                return ''
            plain = greek.group(2).lower()
            plain = plain.capitalize() if greek.group(1) == 'CAPITAL' else plain
            plain += '_' if out or len(word) > 1 else ''
        out.append(plain)
    spelled = ''.join(out).strip('_')
    return spelled if re.fullmatch(r'\w+', spelled, re.ASCII) else ''
