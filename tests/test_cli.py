"""The command line, run in-process through main(), and once as an installed script."""

import io
import json
import math
import os
import shutil
import subprocess
import sys

import pytest


def test_eval_prints_the_value(run_cli):
    assert run_cli('eval', 'x*y*z', 'x=2', 'y=3', 'z=4') == (0, '24.0\n', '')


def test_grad_plain_lines(run_cli):
    code, out, err = run_cli('grad', 'x*y*z', 'x=2', 'y=3', 'z=4')
    assert code == 0 and err == ''
    assert out == 'value\t24.0\nd_x\t12.0\nd_y\t8.0\nd_z\t6.0\n'


def test_grad_json(run_cli):
    code, out, _ = run_cli('grad', 'x*y*z', 'x=2', 'y=3', 'z=4', '--json')
    assert json.loads(out) == {'value': 24.0, 'gradient': {'x': 12.0, 'y': 8.0, 'z': 6.0}}


def test_eval_json(run_cli):
    assert json.loads(run_cli('eval', 'x^2 + 1', 'x=2', '--json')[1]) == {'value': 5.0}


def test_nodes_include_the_intermediate_gradient(run_cli):
    code, out, _ = run_cli('grad', 'x*y*z', 'x=2', 'y=3', 'z=4', '--json', '--nodes')
    nodes = {node['expr']: node for node in json.loads(out)['nodes']}
    assert nodes['x*y']['grad'] == 4.0 and nodes['x*y']['value'] == 6.0
    assert nodes['x*y']['op'] == 'mul' and nodes['x*y*z']['grad'] == 1.0
    assert [node['id'] for node in json.loads(out)['nodes']] == list(range(5))


def test_nodes_plain(run_cli):
    out = run_cli('grad', 'x*y', 'x=2', 'y=3', '--nodes')[1]
    assert 'node\t2\tmul\t-\t-\t6.0\t1.0\tx*y' in out.splitlines()


def test_wrt_limits_the_list(run_cli):
    out = run_cli('grad', 'x*y*z', 'x=2', 'y=3', 'z=4', '--wrt', 'z,x', '--json')[1]
    assert json.loads(out)['gradient'] == {'z': 6.0, 'x': 12.0}


def test_wrt_unknown_variable(run_cli):
    code, _, err = run_cli('grad', 'x*y', 'x=2', 'y=3', '--wrt', 'q')
    assert code == 2 and "'q' is not a variable" in err


def test_non_finite_json_strings(run_cli):
    out = run_cli('grad', 'log(x) - y/0', 'x=0', 'y=1', '--json')[1]
    assert json.loads(out) == {'value': '-inf', 'gradient': {'x': 'inf', 'y': '-inf'}}
    assert json.loads(run_cli('eval', '0/0', '--json')[1]) == {'value': 'nan'}


def test_shortest_round_trip_numbers(run_cli):
    out = run_cli('eval', 'x/3', 'x=1')[1]
    assert out == '0.3333333333333333\n' and float(out) == 1 / 3


def test_constant_expression_bindings(run_cli):
    out = run_cli('eval', 'sin(x)', 'x=pi/6')[1]
    assert float(out) == math.sin(math.pi / 6)
    assert float(run_cli('eval', 'y', 'y=-1.5e-3')[1]) == -1.5e-3


def test_expression_starting_with_minus(run_cli):
    assert run_cli('eval', '-x^2', 'x=3')[1] == '-9.0\n'
    assert run_cli('eval', '--', '-x^2', 'x=3')[1] == '-9.0\n'


def test_stdin(run_cli, monkeypatch):
    monkeypatch.setattr(sys, 'stdin', io.StringIO('x^2 + 1\n'))
    assert run_cli('eval', '-', 'x=2')[1] == '5.0\n'


def test_file(run_cli, tmp_path):
    path = tmp_path / 'f.ad'
    path.write_text('x * y\n')
    assert run_cli('grad', '-f', str(path), 'x=2', 'y=5', '--json')[1] == \
        '{"value": 10.0, "gradient": {"x": 5.0, "y": 2.0}}\n'


def test_missing_file(run_cli):
    code, _, err = run_cli('eval', '-f', '/nonexistent/x.ad')
    assert code == 2 and err.startswith('adgrad: error: cannot read /nonexistent/x.ad')


def test_syntax_error_with_caret(run_cli):
    code, out, err = run_cli('eval', 'x + * y', 'x=1', 'y=2')
    assert (code, out) == (2, '')
    assert err.splitlines() == ["adgrad: error: unexpected '*'; expected '(', '+', '-', '[', "
                                'a name, a number (column 5)', '  x + * y', '      ^']


def test_unknown_function_suggests(run_cli):
    code, _, err = run_cli('eval', 'x + sinn(x)', 'x=1')
    assert code == 2
    assert err.splitlines()[0].startswith("adgrad: error: unknown function 'sinn'; did you mean 'sin'?")
    assert err.splitlines()[2] == '      ^'


def test_missing_variable(run_cli):
    code, _, err = run_cli('eval', 'x*y', 'x=1')
    assert code == 2 and "no value for 'y'" in err


def test_unused_binding_warns(run_cli):
    code, out, err = run_cli('eval', 'x', 'x=1', 'w=2')
    assert (code, out) == (0, '1.0\n') and err == "adgrad: warning: 'w' is not used by the expression\n"


@pytest.mark.parametrize('binding', ['pi=3', 'e=2'])
def test_binding_a_constant_is_an_error(run_cli, binding):
    code, _, err = run_cli('eval', 'x', 'x=1', binding)
    assert code == 2 and 'constant' in err


@pytest.mark.parametrize('binding', ['x', 'x=', '1x=2', 'x=y+1', 'x=2*'])
def test_bad_bindings(run_cli, binding):
    code, out, err = run_cli('eval', 'x', binding)
    assert (code, out) == (2, '') and err.startswith('adgrad: error: ')


def test_non_finite_warning_names_the_first_node(run_cli):
    code, out, err = run_cli('eval', 'exp(log(x) * 2) + 1', 'x=0')
    assert (code, out) == (0, '1.0\n')
    assert err == 'adgrad: warning: log(x) (node 1) is -inf, the first non-finite value\n'


def test_strict_turns_the_warning_into_exit_1(run_cli):
    code, out, err = run_cli('eval', '1/x', 'x=0', '--strict')
    assert (code, out) == (1, '') and err.startswith('adgrad: error: 1/x (node 2) is inf')
    assert run_cli('grad', 'sqrt(x)', 'x=0', '--strict')[0] == 1


def test_usage_errors_exit_2(run_cli):
    assert run_cli()[0] == 2
    assert run_cli('frobnicate')[0] == 2
    assert run_cli('eval')[0] == 2
    code, _, err = run_cli('eval', 'x', '--no-such-option')
    assert code == 2 and len(err.splitlines()) == 1


def test_help_and_version(run_cli):
    code, out, _ = run_cli('grad', '--help')
    assert code == 0 and 'examples:' in out and '--wrt' in out
    assert run_cli('eval', '--help')[0] == 0
    code, out, _ = run_cli('--version')
    assert code == 0 and out.startswith('adgrad ')


def test_no_traceback_for_deep_input(run_cli):
    code, out, _ = run_cli('eval', 'sin(' * 20000 + 'x' + ')' * 20000, 'x=0.5')
    assert code == 0 and 0 < float(out) < 0.5


def _script():
    found = shutil.which('adgrad', path=os.path.dirname(sys.executable)) or shutil.which('adgrad')
    return [found] if found else [sys.executable, '-m', 'autodiff_cli']


def test_installed_script_in_a_subprocess(tmp_path):
    done = subprocess.run(_script() + ['grad', 'x*y*z', 'x=2', 'y=3', 'z=4', '--json'],
                          capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0 and json.loads(done.stdout)['gradient'] == {'x': 12.0, 'y': 8.0, 'z': 6.0}
    done = subprocess.run(_script() + ['eval', '2 +'], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 2 and 'Traceback' not in done.stderr


def test_python_dash_m(tmp_path):
    done = subprocess.run([sys.executable, '-m', 'autodiff_cli', 'eval', 'x^2', 'x=3'],
                          capture_output=True, text=True, cwd=tmp_path)
    assert (done.returncode, done.stdout) == (0, '9.0\n')


def test_table_format_lists_nodes_with_dashes_for_constants(run_cli):
    code, out, err = run_cli('grad', '2*x', 'x=3', '--nodes', '--format', 'table')
    assert code == 0 and err == ''
    rows = [line for line in out.splitlines() if line.startswith('│')]
    assert [row.split('│')[-2].strip() for row in rows] == ['-', '2.0', '1.0']


def test_expressions_that_start_like_short_options(run_cli):
    assert run_cli('grad', '-factor*x', 'factor=2', 'x=1', '--json')[1] == \
        '{"value": -2.0, "gradient": {"factor": -1.0, "x": -2.0}}\n'
    assert run_cli('eval', '-h1', 'h1=4')[1] == '-4.0\n'


def test_input_that_is_not_utf8(run_cli, tmp_path):
    path = tmp_path / 'latin1.ad'
    path.write_bytes(b'x * \xe9')
    code, _, err = run_cli('eval', '-f', str(path))
    assert code == 2 and err == f'adgrad: error: cannot read {path}: byte 4 is not UTF-8 text\n'


def test_wrt_names_a_variable_once(run_cli):
    code, _, err = run_cli('grad', 'x*y', 'x=1', 'y=2', '--wrt', 'x,x')
    assert code == 2 and err == "adgrad: error: --wrt lists 'x' twice\n"


@pytest.mark.parametrize('binding, value', [('x=inf', 'inf'), ('x=-Infinity', '-inf'),
                                            ('x=nan', 'nan'), ('x=+2.5e3', '2500.0')])
def test_number_bindings(run_cli, binding, value):
    assert run_cli('eval', 'x', binding)[1] == value + '\n'


def test_binding_values_follow_the_language(run_cli):
    code, _, err = run_cli('eval', 'x', 'x=1_000')
    assert code == 2 and "unexpected '_000'" in err


def test_a_bug_is_one_line_and_exit_70(run_cli, monkeypatch):
    import autodiff_cli.core.passes

    def broken(*args, **kwargs):
        raise ZeroDivisionError('a planted bug')
    monkeypatch.setattr(autodiff_cli.core.passes, 'forward', broken)
    code, out, err = run_cli('eval', 'x', 'x=1')
    assert (code, out) == (70, '')
    assert err == ('adgrad: internal error: ZeroDivisionError: a planted bug '
                   '(run with --traceback and report it)\n')
    code, out, err = run_cli('eval', 'x', 'x=1', '--traceback')
    assert (code, out) == (70, '')
    assert err.startswith('Traceback (most recent call last):\n')
    assert 'ZeroDivisionError: a planted bug\n' in err and err.endswith(
        'adgrad: internal error: ZeroDivisionError: a planted bug '
        '(run with --traceback and report it)\n')
    code, _, err = run_cli('eval', 'x +', 'x=1', '--traceback')   # bad input: still exit 2
    assert code == 2 and 'AdgradError' in err and err.endswith('^\n')


def test_error_lines_show_a_window_around_the_caret(run_cli):
    text = '(' * 5000 + 'x'
    code, _, err = run_cli('eval', text, 'x=1')
    message, shown, caret = err.splitlines()
    assert code == 2 and len(shown) < 110 and shown.endswith('x')
    assert caret.index('^') == len(shown)  # just past the x: the input ended too soon
    code, _, err = run_cli('eval', 'x\t+\tsinn(x)', 'x=1')
    _, shown, caret = err.splitlines()
    assert '\t' not in shown and shown[caret.index('^'):].startswith('sinn')


def test_calling_a_value(run_cli):
    code, _, err = run_cli('eval', 'g = 1; g(2)')
    assert code == 2 and "'g' is a value, not a function" in err
    assert "'pi' is a value, not a function" in run_cli('eval', 'pi(2)')[2]


def test_empty_binding_value(run_cli):
    code, _, err = run_cli('eval', 'x', 'x=')
    assert code == 2 and err == "adgrad: error: bad binding 'x=': no value after '='\n"


def test_a_full_disk_is_one_line(tmp_path):
    if not os.path.exists('/dev/full'):
        pytest.skip('no /dev/full here')
    with open('/dev/full', 'w') as full:
        done = subprocess.run(_script() + ['eval', 'x', 'x=1'], stdout=full,
                              stderr=subprocess.PIPE, text=True)
    assert done.returncode == 2
    assert done.stderr == 'adgrad: error: cannot write the output: No space left on device\n'


# ---- the registry of commands, and what start-up builds ----

def test_every_command_has_a_module_with_add_arguments_and_run(run_cli):
    from autodiff_cli.cli.context import Command
    for command in Command:
        module = command.load()
        assert callable(module.add_arguments) and callable(module.run)
        code, out, err = run_cli(command.value, '--help')
        assert (code, err) == (0, '') and out.startswith(f'usage: adgrad {command.value} ')
    code, out, _ = run_cli('--help')
    assert code == 0 and all(c.summary in out for c in Command)


def test_only_the_command_being_run_is_built(tmp_path):
    check = ("import sys\nfrom autodiff_cli.cli.main import main\n"
             "main(['grad', 'x*y', 'x=2', 'y=3'])\n"
             "print(sorted(m for m in sys.modules if m in ('shutil', 'rich', 'shtab', 'dataclasses',"
             " 'autodiff_cli.table.pipeline', 'autodiff_cli.table.sources',"
             " 'autodiff_cli.table.options', 'autodiff_cli.cli.completion')"
             " or m.startswith('autodiff_cli.cli.render')))")
    done = subprocess.run([sys.executable, '-c', check], capture_output=True, text=True, cwd=tmp_path)
    assert done.stdout == 'value\t6.0\nd_x\t3.0\nd_y\t2.0\n[]\n', done.stderr


def test_formats_are_enums_that_stand_for_their_words():
    from autodiff_cli.cli.output import Format
    assert Format('csv') is Format.CSV and Format.CSV == 'csv' and f'{Format.CSV}' == 'csv'
    assert {'csv': 1}[Format.CSV] == 1 and json.dumps(Format.TSV) == '"tsv"'


def test_a_registered_command_runs_through_the_registry(run_cli, monkeypatch):
    """What a new command module needs: add_arguments and run(args, env)."""
    import types

    from autodiff_cli.cli import context
    fake = types.SimpleNamespace(
        add_arguments=lambda parser, command: parser.add_argument('--times', type=int),
        run=lambda args, env: env.stdout.write(f'{args.command} {args.times * 2}\n') and 0)
    monkeypatch.setattr(context.Command, 'load', lambda self: fake)
    assert run_cli('eval', '--times', '21') == (0, 'eval 42\n', '')


@pytest.mark.parametrize('argv', [
    ['check', 'sin(x)*y', 'x=0.3', 'y=2'],
    ['hessian', 'w1*x1 + w2*x2*x1 + log(1 + exp(-b*w1*w2)) + y*x2^3', 'x1=1.5', 'x2=-0.5',
     'w1=0.8', 'w2=-0.4', 'b=0.1', 'y=1.3'],
])
def test_a_table_too_wide_for_80_columns_shows_records_with_every_digit(run_cli, monkeypatch,
                                                                         argv):
    """check's 8 columns and a 6x6 Hessian cannot fit 80 columns with their
    numbers whole: each row becomes a record (a rule, then header and cell
    per line), and every number of --format json is there, digit for digit."""
    monkeypatch.setenv('COLUMNS', '80')
    code, out, err = run_cli(*argv, '--format', 'table')
    assert code == 0 and err == ''
    assert max(len(line) for line in out.splitlines()) <= 80 and '…' not in out
    code, text, _ = run_cli(*argv, '--format', 'json')
    data = json.loads(text)
    if isinstance(data, dict):   # the Hessian
        numbers = [v for row in data['hessian'] for v in row]
        names = data['variables']
        assert [line.split()[0] for line in out.splitlines() if '──' in line] == names
    else:                        # check: a list of rows
        numbers = [row[k] for row in data for k in ('ad', 'fd', 'abs_error', 'rel_error')]
        assert out.count('verdict   pass') == len(data) == 2
    cells = out.split()
    assert all(repr(float(n)) in cells for n in numbers)


def test_the_nodes_table_at_80_columns_never_cuts_a_number(run_cli, monkeypatch):
    """Numbers keep their digits or are rounded to 7 significant ones, never
    cut with an ellipsis; the expression column folds between terms."""
    monkeypatch.setenv('COLUMNS', '80')
    program = ('input x = 0.000393816, y = 123456.789012345\n'
               'z = sin(x*y)/(x + y^2) + tanh(x)*exp(-y/1000) + log(1 + x*x*y*y)')
    code, out, err = run_cli('grad', program, '--nodes', '--format', 'table')
    assert code == 0 and err == ''
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 80 and '…' not in out
    rows = [line.split('│') for line in lines if line.startswith('│')]
    numbers = [cell.strip() for row in rows for cell in row[-3:-1] if cell.strip() not in ('', '-')]
    assert len(numbers) > 30 and all(float(n) == float(n) for n in numbers)
    assert '2.417674e-54' in out   # exp(-y/1000), to 7 digits


def test_a_binding_to_a_variable_says_what_a_value_may_be(run_cli):
    code, out, err = run_cli('grad', 'x^2', 'x=abc')
    assert (code, out) == (2, '')
    assert err == ("adgrad: error: in x=: a value must be a number or a constant expression "
                   "such as pi/4; 'abc' is a variable\n")


def test_a_name_and_value_list_too_narrow_puts_each_value_below_its_name(run_cli, monkeypatch):
    monkeypatch.setenv('COLUMNS', '30')
    code, out, err = run_cli('grad', 'sin(x)*cos(y)*exp(x) + x*y*log(y)', 'x=1', 'y=2',
                             '--format', 'table')
    _, plain, _ = run_cli('grad', 'sin(x)*cos(y)*exp(x) + x*y*log(y)', 'x=1', 'y=2',
                          '--format', 'plain')
    assert code == 0 and max(len(line) for line in out.splitlines()) <= 30
    numbers = [line.split('\t')[1] for line in plain.splitlines()]
    lines = [line.strip() for line in out.splitlines()]
    assert [lines[lines.index(name) + 1] for name in ('value', '∂f/∂x', '∂f/∂y')] == numbers


def test_check_csv_quotes_a_hessian_entry_so_every_row_has_the_header_s_fields(run_cli):
    import csv
    code, out, _ = run_cli('check', 'x^3*y + abs(y - 2)', 'x=1', 'y=2', '--order', '2',
                           '--format', 'csv')
    rows = list(csv.reader(io.StringIO(out)))
    assert code == 0 and {len(r) for r in rows} == {8}
    entries = [r[1] for r in rows[1:]]
    assert entries == ['x', 'y', 'x,x', 'y,x', 'x,y', 'y,y']
    assert float(rows[entries.index('x,x') + 1][2]) == 6.0 * 1 * 2    # d2/dx2 x^3 y = 6xy


@pytest.mark.parametrize('command', ['check', 'hessian'])
def test_a_format_a_command_cannot_write_is_named_by_its_word(command, run_cli):
    code, _, err = run_cli(command, 'x*y', 'x=1', 'y=2', '--format', 'jsonl' if command == 'check'
                           else 'xml')
    assert code == 2 and "invalid choice: '" in err and '(choose from table, plain, json' in err
    assert '<' not in err and err.count('\n') == 1


@pytest.mark.parametrize('command', ['eval', 'grad', 'diff', 'hessian', 'check', 'render'])
def test_help_fits_an_80_column_terminal(command):
    env = {**os.environ, 'COLUMNS': '80'}
    result = subprocess.run([sys.executable, '-m', 'autodiff_cli', command, '--help'],
                            capture_output=True, text=True, env=env, encoding='utf-8')
    assert result.returncode == 0
    wide = [line for line in result.stdout.splitlines() if len(line) > 80]
    assert not wide, wide


@pytest.mark.parametrize('words, hint', [
    (['gard', 'x*y', 'x=1', 'y=2'], "did you mean 'grad'?"),
    (['grad', 'x*y', 'x=1', 'y=2', '--jsn'], "did you mean '--json'?"),
    (['render', 'x', 'x=1', '--formt', 'png'], "did you mean '--format'?"),
    (['grad', 'x', 'x=1', '--forma=csv'], "did you mean '--format'?"),
    (['grad', 'x', 'x=1', '--zzzzzz'], None),
])
def test_a_mistyped_command_or_option_gets_the_nearest_name(words, hint, run_cli):
    code, out, err = run_cli(*words)
    assert code == 2 and out == '' and err.count('\n') == 1, err
    assert (hint in err) if hint else ('did you mean' not in err), err


@pytest.mark.parametrize('program, hint', [
    ('2x', "write 2*x for a product"), ('2.5e3 y', "write 2.5e3*y for a product"),
    ('sin x', "write sin(x) to call sin"), ('x²', "write '^2' instead"),
    ('π*x', "write 'pi' instead"), ('2×x', "write '*' instead"), ('x−1', "write '-' instead"),
])
def test_a_newcomers_spelling_gets_adgrads(program, hint, run_cli):
    code, out, err = run_cli('eval', program, 'x=1', 'y=1')
    assert code == 2 and out == '' and hint in err, err
    assert err.startswith('adgrad: error: unexpected ') and err.count('\n') == 3, err  # line, source, caret


def test_a_name_that_is_no_variable_lists_the_variables(run_cli):
    code, _, err = run_cli('grad', 'x*y', '--wrt', 'zz', 'x=1', 'y=2')
    assert code == 2 and "its variables are x, y" in err, err


def test_a_missing_column_shows_the_header_found(tmp_path, run_cli):
    points = tmp_path / 'semi.csv'
    points.write_text('x;y\n1;2\n')
    code, _, err = run_cli('grad', 'x*y', '--points', str(points))
    assert code == 2 and "(theirs: 'x;y')" in err, err


def test_bindings_before_the_expression_are_named_and_reordered(run_cli):
    code, out, err = run_cli('grad', 'x=2', 'x*y', 'y=3')
    assert code == 2 and out == '' and err.count('\n') == 1, err
    assert "the expression comes first, as in adgrad grad 'x*y' x=2 y=3" in err, err
    assert run_cli('grad', 'x*y', 'x=2', 'y=3')[0] == 0   # what the hint says works


def test_explain_on_a_terminal_wraps_between_words():
    """On a 60-column terminal each diagnosis line fits and every number is
    whole; through a pipe each finding stays on one line, for grep."""
    import pty
    from pathlib import Path
    deep = str(Path(__file__).resolve().parent.parent / 'samples' / 'deep.ad')
    command = [sys.executable, '-m', 'autodiff_cli', 'grad', '-f', deep, '--explain']
    piped = subprocess.run(command, capture_output=True, text=True, timeout=60).stdout
    finding = piped.split('diagnosis:\n')[1].splitlines()[0].strip()
    assert len(finding) > 60, finding    # long enough to need wrapping
    main, child = pty.openpty()
    run = subprocess.run(command, stdout=child, stderr=subprocess.PIPE, timeout=60,
                         env={**os.environ, 'COLUMNS': '60', 'NO_COLOR': '1'})
    os.close(child)
    out = b''
    while True:
        try:
            data = os.read(main, 65536)
        except OSError:
            break
        if not data:
            break
        out += data
    os.close(main)
    assert run.returncode == 0, run.stderr
    wrapped = out.decode().replace('\r\n', '\n').split('diagnosis:\n')[1]
    assert all(len(line) <= 60 for line in wrapped.splitlines()), wrapped
    assert ' '.join(wrapped.split()) == ' '.join(finding.split()), wrapped   # cut at spaces only


def test_explain_keeps_json_and_csv_readable(run_cli):
    """(found by a new-user trial) --explain --json printed its findings after
    the JSON, so the output was not JSON: they are a list inside it; with CSV
    they go to stderr, and stdout stays the rows."""
    import csv
    import io
    code, out, err = run_cli('grad', 'x*y', 'x=1', 'y=2', '--explain', '--json')
    record = json.loads(out)
    assert (code, err) == (0, '') and record['gradient'] == {'x': 2.0, 'y': 1.0}
    assert record['diagnosis'][0].startswith('x: gradient 2;')
    code, out, err = run_cli('grad', 'x*y', 'x=1', 'y=2', '--explain', '--format', 'jsonl')
    assert json.loads(out)['diagnosis'] == record['diagnosis']
    code, out, err = run_cli('grad', 'x*y', 'x=1', 'y=2', '--explain', '--format', 'csv')
    assert list(csv.reader(io.StringIO(out))) == [['x', 'y', 'value', 'd_x', 'd_y'],
                                                 ['1.0', '2.0', '2.0', '2.0', '1.0']]
    assert err.startswith('diagnosis:\n  x: gradient 2;')
