"""Every sample, run through the CLI, against the numbers in its `# expect:` comment."""

import json
import re
from pathlib import Path

import pytest

SAMPLES = sorted((Path(__file__).parent.parent / 'samples').glob('*.ad'))


def expected(path):
    """{'value': v, 'd_x': g, ...} from the `# expect:` comment and its continuation lines."""
    text = path.read_text()
    match = re.search(r'^# expect: (.*(?:\n#   .*)*)', text, re.M)
    assert match, f'{path.name} has no # expect: comment'
    fields = re.sub(r'\n#\s+', ' ', match.group(1)).split(', ')
    return {key: float(value) for key, value in (field.split() for field in fields)}


def test_the_samples_are_there():
    assert {p.stem for p in SAMPLES} >= {'product', 'blocks', 'deep', 'neuron', 'logistic',
                                        'softmax', 'mlp'}


@pytest.mark.parametrize('path', SAMPLES, ids=lambda p: p.name)
def test_sample(path, run_cli):
    code, out, err = run_cli('grad', '-f', str(path), '--json')
    assert code == 0 and err == ''
    result = json.loads(out)
    got = {'value': result['value'], **{f'd_{k}': v for k, v in result['gradient'].items()}}
    want = expected(path)
    assert got.keys() == want.keys()
    for key in want:
        assert got[key] == pytest.approx(want[key], rel=1e-12, abs=1e-15), key


def test_command_line_bindings_override_defaults(run_cli):
    path = Path(__file__).parent.parent / 'samples' / 'product.ad'
    out = run_cli('grad', '-f', str(path), 'x=5', '--json')[1]
    assert json.loads(out) == {'value': 60.0, 'gradient': {'x': 12.0, 'y': 20.0, 'z': 15.0}}
