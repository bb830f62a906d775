"""Every command starts from the same load(): bindings, constants, notes and
standard input behave alike in eval, grad, render, diff, hessian and check.

The numbers are derived by hand: for e*x at e=2, x=3 the value is 6, the
gradient (x, e) = (3, 2), and the Hessian [[0, 1], [1, 0]].
"""

import json

import pytest

from tests.helpers import run_main

OWN_E = 'input e = 1\ne*x'     # the program makes the constant e its own input
NOTE = ("adgrad: note: 'e' is this program's own input from here on, "
        'not the constant e = 2.718281828459045\n')
AT = ['e=2', 'x=3']
RENDER = ['--format', 'text', '-o', '-']


def command_lines(program, bindings):
    """Each command that takes values, on the same program and bindings."""
    return {
        'eval': ['eval', program, *bindings],
        'grad': ['grad', program, *bindings, '--json'],
        'render': ['render', program, *bindings, *RENDER],
        'hessian': ['hessian', program, *bindings, '--json'],
        'check': ['check', program, *bindings, '--json'],
    }


def test_a_program_that_owns_e_can_bind_it_in_every_command():
    runs = {name: run_main(argv) for name, argv in command_lines(OWN_E, AT).items()}
    for name, run in runs.items():
        assert (run.code, run.err) == (0, NOTE), name
    assert float(runs['eval'].out) == 6.0
    assert json.loads(runs['grad'].out) == {'value': 6.0, 'gradient': {'e': 3.0, 'x': 2.0}}
    assert json.loads(runs['hessian'].out)['hessian'] == [[0.0, 1.0], [1.0, 0.0]]
    assert {row['variable']: row['ad'] for row in json.loads(runs['check'].out)} == \
        {'e': 3.0, 'x': 2.0}
    steps = runs['render'].out
    assert '∂f/∂x = ∂f/∂f · ∂(e*x)/∂x = 1 · e = 1 · 2 = 2\n' in steps
    assert '∂f/∂e = ∂f/∂f · ∂(e*x)/∂e = 1 · x = 1 · 3 = 3\n' in steps


def test_diff_reads_the_same_program_and_says_the_same_note():
    run = run_main(['diff', OWN_E])
    assert (run.code, run.err) == (0, NOTE)
    assert run.out == 'input e = 1\nd_e = x\nd_x = e\n'


@pytest.mark.parametrize('name', ['eval', 'grad', 'render', 'hessian', 'check'])
def test_the_constant_e_is_refused_alike(name):
    run = run_main(command_lines('x*e', ['e=2', 'x=1'])[name])
    assert (run.code, run.out, run.err) == (2, '', "adgrad: error: cannot bind the constant 'e'\n")


@pytest.mark.parametrize('name', ['eval', 'grad', 'render', 'hessian', 'check'])
def test_an_unused_binding_is_the_same_warning(name):
    run = run_main(command_lines('x*y', ['x=1', 'y=2', 'xx=3'])[name])
    assert run.code == 0 and run.err == "adgrad: warning: 'xx' is not used by the expression\n"


@pytest.mark.parametrize('name', ['eval', 'grad', 'render', 'hessian', 'check', 'diff'])
def test_a_lowering_note_reaches_stderr_in_every_command(name):
    program = 'a = 2; b = 3; a*b'
    argv = ['diff', program] if name == 'diff' else command_lines(program, [])[name]
    run = run_main(argv)
    assert run.err.startswith("adgrad: note: 'a = 2' is a constant, so nothing here is a variable")


def test_standard_input_is_read_alike():
    runs = {name: run_main([argv[0], '-', *argv[2:]], stdin=OWN_E.encode())
            for name, argv in command_lines(OWN_E, AT).items()}
    runs['diff'] = run_main(['diff', '-'], stdin=OWN_E.encode())
    for name, run in runs.items():
        assert (run.code, run.err) == (0, NOTE), name
    assert json.loads(runs['grad'].out)['gradient'] == {'e': 3.0, 'x': 2.0}
    assert runs['diff'].out == 'input e = 1\nd_e = x\nd_x = e\n'
