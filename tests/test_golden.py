"""Pictures of the samples against golden DOT files (tests/golden/NAME.dot).

Each golden file is the output of `adgrad render -f samples/NAME.ad --format
dot -o -`, run from the repository's root. After a deliberate change to
pictures, regenerate them with `python -m tests.update_golden` and read the
diff before committing it. This test only reads them: one that rewrote
the file it then compares with could never fail.
"""

import pytest

from tests import update_golden


@pytest.mark.parametrize('sample', update_golden.SAMPLES, ids=lambda p: p.stem)
def test_sample_picture_matches_its_golden_dot(sample):
    code, out, err = update_golden.render(sample)
    assert code == 0, err
    golden = update_golden.golden(sample)
    assert golden.exists(), f'no {golden.name}: run python -m tests.update_golden'
    assert out == golden.read_text(encoding='utf-8'), \
        f'{sample.name} renders differently from {golden.name}; if that is intended, ' \
        'run python -m tests.update_golden and review the diff'


def test_every_golden_file_has_its_sample():
    names = {p.stem for p in update_golden.SAMPLES}
    assert {p.stem for p in update_golden.GOLDEN.glob('*.dot')} <= names
