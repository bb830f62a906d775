"""The LALR(1) table of grammar/adgrad.lark, computed by Lark, as plain data.

Lark builds the table from the grammar file, which stays the only
description of the language; this module flattens Lark's table, terminals
and rule shapes into JSON that parse.py drives without importing Lark
(importing Lark and building its parser cost more start-up time than all
the rest of adgrad together).

A copy ships in the package as grammar_table.json, recording the grammar
text it was built from; parse.py uses it only while that text matches the
grammar file, and tests/test_parse.py checks that it does. After editing
the grammar, regenerate it with:

    python -m autodiff_cli.language.grammar_table

That also writes shipped_table.py: the same table as Python literals, with
the checksum of the JSON text it copies. An installed package loads it from
compiled bytecode without importing json, which every command's start-up
would pay for; parse.py takes it only while that checksum matches the JSON
file.
"""

import json
import re
import zlib

from .parse import FAST_COPY, FORMAT, SHIPPED, grammar_text


class NewlinesInParentheses:
    """A new line inside parentheses is white space, as in Python."""

    always_accept = ('_NEWLINE',)

    def process(self, stream):
        depth = 0
        for token in stream:
            if token.type == 'LPAR':
                depth += 1
            elif token.type == 'RPAR':
                depth = max(depth - 1, 0)
            elif token.type == '_NEWLINE' and depth:
                continue
            yield token


def lark_parser(grammar):
    """The reference parser: Lark's own LALR parser for the grammar.

    parse.py must accept the same language as this, with the same trees, and
    tests/test_parse.py compares the two.
    """
    from lark import Lark

    return Lark(grammar, start='program', parser='lalr', lexer='contextual',
                keep_all_tokens=True, postlex=NewlinesInParentheses(),
                maybe_placeholders=False)


def build(grammar):
    """The table for a grammar text, as a JSON-ready dict."""
    parser = lark_parser(grammar)
    table = parser.parser.parser.parser.parse_table
    rules = parser.rules
    rule_index = {rule: i for i, rule in enumerate(rules)}

    # Terminals in the order Lark's lexer tries them: the first that matches
    # wins, so this order is part of the language.
    terminals = sorted(parser.terminals, key=lambda t: (-t.priority, -t.pattern.max_width,
                                                        -len(t.pattern.value), t.name))
    if any(t.pattern.flags for t in terminals):
        raise ValueError('terminal flags are not supported by parse.py')
    for t in terminals:
        if re.compile(t.pattern.to_regexp()).groups:
            # parse.py splits the text with findall over all terminals,
            # which returns groups instead of pieces where there are any.
            raise ValueError(f'the terminal {t.name} has a capturing group; write (?:...)')
    strings = {t.name: t.pattern.value for t in terminals if t.pattern.type == 'str'}
    # A keyword a regular terminal also matches (`input` is a NAME) is lexed as
    # that terminal; parse.py makes it the keyword where the parser takes it.
    keywords = {}
    for regular in terminals:
        for keyword in terminals:
            if regular.pattern.type == 're' and keyword.pattern.type == 'str' \
                    and keyword.priority == regular.priority:
                literal = keyword.pattern.value
                match = re.match(regular.pattern.to_regexp(), literal)
                if match and match.group(0) == literal:
                    keywords.setdefault(regular.name, {})[literal] = keyword.name
    embedded = {name for words in keywords.values() for name in words.values()}
    lexer = [[t.name, t.pattern.to_regexp()] for t in terminals if t.name not in embedded]

    # Lark's state numbers follow set iteration, varying from run to run;
    # breadth-first numbers make the same grammar give the same bytes.
    start = table.start_states['program']
    order, seen = [start], {start}
    for state in order:
        for symbol, (act, arg) in sorted(table.states[state].items()):
            if act.name == 'Shift' and arg not in seen:
                seen.add(arg)
                order.append(arg)
    number = {state: i for i, state in enumerate(order)}

    def action(act, arg):
        # A shift is the target state; a reduce is ~rule (negative).
        return number[arg] if act.name == 'Shift' else ~rule_index[arg]

    from lark import __version__ as lark_version
    return {
        'format': FORMAT,
        'lark': lark_version,
        'grammar_crc32': zlib.crc32(grammar.encode('utf-8')),
        'start': number[start],
        'end': number[table.end_states['program']],
        'terminals': lexer,
        'ignore': sorted(parser.ignore_tokens),
        'keywords': keywords,
        'strings': strings,
        'rules': [{'origin': rule.origin.name,
                   'size': len(rule.expansion),
                   'callback': rule.alias or rule.origin.name,
                   'inline_single': bool(rule.options.expand1 and not rule.alias)}
                  for rule in rules],
        'states': [{symbol: action(*act) for symbol, act in sorted(table.states[state].items())}
                   for state in order],
    }


def dump(table):
    return json.dumps(table, indent=0, sort_keys=True) + '\n'


def fast_copy(text):
    """shipped_table.py for the JSON text of a table: one line per entry, and
    one per state and rule."""
    lines = ['# Generated by `python -m autodiff_cli.language.grammar_table`: do not edit.',
             '# grammar_table.json as Python literals, which load without json; parse.py',
             '# uses them only while JSON_CRC32 is the checksum of that file.',
             f'JSON_CRC32 = {zlib.crc32(text.encode("utf-8"))}',
             'TABLE = {']
    for key, value in json.loads(text).items():
        if isinstance(value, list):
            lines += [f'    {key!r}: [', *(f'        {item!r},' for item in value), '    ],']
        else:
            lines.append(f'    {key!r}: {value!r},')
    return '\n'.join(lines + ['}']) + '\n'


def main():
    text = dump(build(grammar_text()))
    for path, content in ((SHIPPED, text), (FAST_COPY, fast_copy(text))):
        with open(path, 'w', encoding='utf-8', newline='\n') as f:   # the bytes checksummed
            f.write(content)
        print(f'wrote {path}')


if __name__ == '__main__':
    main()
