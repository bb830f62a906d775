"""The package's import graph has no circle, counting imports inside functions.

An import inside a function hides a circle from Python (and from
import-linter, which sees it as an edge all the same but allows it between
modules of one layer): each module's every `import` and `from` statement,
wherever it stands, is an edge here.
"""

import ast
from pathlib import Path

PACKAGE = Path(__file__).parent.parent / 'autodiff_cli'


def modules(root=PACKAGE):
    """{dotted module name: source path} for every module of the package."""
    found = {}
    for path in sorted(root.rglob('*.py')):
        parts = path.relative_to(root.parent).with_suffix('').parts
        if parts[-1] == '__init__':
            parts = parts[:-1]
        found['.'.join(parts)] = path
    return found


def imported(name, path, known):
    """The package's modules that the module `name` imports, anywhere in its text."""
    package = name if path.name == '__init__.py' else name.rpartition('.')[0]
    targets = set()
    for node in ast.walk(ast.parse(path.read_text(encoding='utf-8'))):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ''
            if node.level:
                anchor = package.split('.')
                anchor = anchor[:len(anchor) - node.level + 1]
                base = '.'.join(anchor + ([node.module] if node.module else []))
            for alias in node.names:   # `from ..pictures import render` names a module
                full = f'{base}.{alias.name}'
                targets.add(full if full in known else base)
    return {t for t in targets if t in known and t != name}


def cycles(edges):
    """The strongly connected components with more than one module (Tarjan's, iterative)."""
    index, low, on_stack, stack, found, counter = {}, {}, set(), [], [], [0]
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_module_imports_itself_round_a_circle():
    known = modules()
    edges = {name: imported(name, path, known) for name, path in known.items()}
    assert cycles(edges) == []


def test_a_circle_through_a_function_level_import_is_found(tmp_path):
    package = tmp_path / 'pkg'
    (package / 'sub').mkdir(parents=True)
    (package / '__init__.py').write_text('')
    (package / 'sub' / '__init__.py').write_text('')
    (package / 'sub' / 'a.py').write_text('from . import b\n')
    (package / 'sub' / 'b.py').write_text('def f():\n    from ..c import g\n')
    (package / 'c.py').write_text('def g():\n    from .sub.a import x\n')
    (package / 'd.py').write_text('import pkg.c\n')
    known = modules(package)
    edges = {name: imported(name, path, known) for name, path in known.items()}
    assert cycles(edges) == [['pkg.c', 'pkg.sub.a', 'pkg.sub.b']]


def test_the_rows_pipeline_imports_nothing_of_the_command_line():
    """table/ is below cli/: not one import of it, at the top or in a function."""
    known = modules()
    upward = {name: sorted(t for t in imported(name, path, known)
                           if t == 'autodiff_cli.cli' or t.startswith('autodiff_cli.cli.'))
              for name, path in known.items() if name.startswith('autodiff_cli.table')}
    assert len(upward) > 5 and {n: t for n, t in upward.items() if t} == {}


def test_the_library_below_the_command_line_imports_none_of_it():
    """Program, and every layer under it, reach the commands' loading through
    table/bindings.py, never through cli/: not one import of cli/, anywhere."""
    known = modules()
    upward = {name: sorted(t for t in imported(name, path, known)
                           if t == 'autodiff_cli.cli' or t.startswith('autodiff_cli.cli.'))
              for name, path in known.items()
              if not name.startswith('autodiff_cli.cli')
              and name not in ('autodiff_cli', 'autodiff_cli.__main__')}
    assert 'autodiff_cli.program' in upward and {n: t for n, t in upward.items() if t} == {}
