"""Every sample, run through the CLI, against the numbers in its `# expect:` comment."""

import json
import re
from pathlib import Path

import numpy as np
import pytest

SAMPLES = sorted((Path(__file__).parent.parent / 'samples').glob('*.ad'))


def expected(path):
    """{'value': v, 'd_x': g, ...} from the `# expect:` comment and its continuation
    lines; an array program's as JSON, from `# expect-json:`."""
    text = path.read_text()
    match = re.search(r'^# expect(-json)?: (.*(?:\n#   .*)*)', text, re.M)
    assert match, f'{path.name} has no # expect: comment'
    joined = re.sub(r'\n#\s+', ' ', match.group(2))
    if match.group(1):
        result = json.loads(joined)
        return {'value': result['value'], **{f'd_{k}': v for k, v in result['gradient'].items()}}
    fields = joined.split(', ')
    return {key: float(value) for key, value in (field.split() for field in fields)}


def test_the_samples_are_there():
    assert {p.stem for p in SAMPLES} >= {'product', 'blocks', 'deep', 'neuron', 'logistic',
                                        'softmax', 'mlp', 'mlp_scalar'}


@pytest.mark.parametrize('path', SAMPLES, ids=lambda p: p.name)
def test_sample(path, run_cli):
    data = re.search(r'^# data: (\S+)', path.read_text(), re.M)   # its --data file, beside it
    code, out, err = run_cli('grad', '-f', str(path), '--json',
                             *(['--data', str(path.parent / data.group(1))] if data else []))
    assert code == 0 and err == ''
    result = json.loads(out)
    got = {'value': result['value'], **{f'd_{k}': v for k, v in result['gradient'].items()}}
    want = expected(path)
    assert got.keys() == want.keys()
    for key in want:
        np.testing.assert_allclose(got[key], want[key], rtol=1e-12, atol=1e-15, err_msg=key)


def test_the_two_perceptrons_are_one_network(run_cli):
    """mlp.ad's matrices hold mlp_scalar.ad's parameters, neuron k in row k:
    the same loss, and each gradient entry the scalar one's."""
    def result(name):
        code, out, err = run_cli('grad', '-f', str(SAMPLES[0].parent / name), '--json')
        assert code == 0, err
        return json.loads(out)
    matrices, scalars = result('mlp.ad'), result('mlp_scalar.ad')
    assert matrices['value'] == pytest.approx(scalars['value'], rel=1e-15)
    g, s = matrices['gradient'], scalars['gradient']
    for k in range(4):
        assert g['W1'][k][0] == pytest.approx(s[f'w{k + 1}'], rel=1e-14)
        assert g['b1'][k] == pytest.approx(s[f'b{k + 1}'], rel=1e-14)
        assert g['V'][0][k] == pytest.approx(s[f'v{k + 1}'], rel=1e-14)
    assert (g['c'], g['target']) == pytest.approx((s['c'], s['target']), rel=1e-14)
    assert g['x'][0] == pytest.approx(s['x'], rel=1e-14)


def test_command_line_bindings_override_defaults(run_cli):
    path = Path(__file__).parent.parent / 'samples' / 'product.ad'
    out = run_cli('grad', '-f', str(path), 'x=5', '--json')[1]
    assert json.loads(out) == {'value': 60.0, 'gradient': {'x': 12.0, 'y': 20.0, 'z': 15.0}}


def printed(path):
    """{'value': v, ...} from the `# adgrad prints:` comment, or None."""
    match = re.search(r'^# adgrad prints: (.*(?:\n#   .*)*)', path.read_text(), re.M)
    if match is None:
        return None
    fields = re.sub(r'\n#\s+', ' ', match.group(1)).split(', ')
    return {key: float(value) for key, value in (field.split() for field in fields)}


@pytest.mark.parametrize('path', SAMPLES, ids=lambda p: p.name)
def test_a_sample_says_what_adgrad_prints_beside_the_exact_numbers(path, run_cli):
    """`# expect:` holds the exact numbers, which adgrad meets within 1e-12;
    where the docs show adgrad's own (deep.ad's d_x ...693e-05 against the
    exact ...702e-05), `# adgrad prints:` says them, bit for bit."""
    says = printed(path)
    if path.stem in ('deep', 'deep_loop', 'neuron'):
        assert says is not None, f'{path.name} does not say what adgrad prints'
    if says is None:
        return
    code, out, _ = run_cli('grad', '-f', str(path), '--json')
    result = json.loads(out)
    assert says == {'value': result['value'],
                    **{f'd_{k}': v for k, v in result['gradient'].items()}}
    assert says.keys() == expected(path).keys() and says != expected(path)
