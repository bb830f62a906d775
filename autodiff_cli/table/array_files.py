"""An array value from a file, for a binding such as W=@w.npy.

`.npy` is read with allow_pickle=False, so a file of objects is refused,
never run; `.json` holds nested lists of numbers; `.csv` and `.tsv` hold
numbers, no header: one row or one column is a vector, else a matrix.
Every value is float64, with at most 3 axes and no empty one.
"""

from ..errors import UsageError

MAX_AXES = 3


def read_array(path):
    """The float64 array in the file at `path`; a UsageError naming it otherwise."""
    import numpy as np
    suffix = path.rsplit('.', 1)[-1].lower() if '.' in path else ''
    try:
        if suffix == 'npy':
            value = np.load(path, allow_pickle=False)
            if value.dtype.kind not in 'biuf':
                raise UsageError(f'{path} holds {value.dtype} values, not numbers')
        elif suffix == 'json':
            import json
            with open(path, encoding='utf-8') as f:
                value = _numbers(json.load(f), path)
        elif suffix in ('csv', 'tsv', 'txt'):
            delimiter = '\t' if suffix == 'tsv' else ','
            import warnings
            with warnings.catch_warnings():   # an empty file: the size check below says so
                warnings.simplefilter('ignore', UserWarning)
                value = np.loadtxt(path, delimiter=delimiter, dtype=np.float64, ndmin=2,
                                   encoding='utf-8')
            if 1 in value.shape:
                value = value.ravel()
        else:
            raise UsageError(f"cannot tell what {path} holds: name it .npy, .json, .csv or .tsv")
    except OSError as error:
        raise UsageError(f'cannot read {path}: {error.strerror or error}') from None
    except (ValueError, UnicodeDecodeError) as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise UsageError(f'cannot read {path}: {first}') from None
    value = np.asarray(value, dtype=np.float64)
    if value.ndim > MAX_AXES:
        raise UsageError(f'{path} holds an array of {value.ndim} axes; adgrad takes at most '
                         f'{MAX_AXES}')
    if value.size == 0:
        raise UsageError(f'{path} holds an empty array')
    return value


def _numbers(data, path):
    """Nested lists of JSON numbers as an array; ragged or non-numeric ones refused."""
    import numpy as np
    try:
        value = np.array(data, dtype=np.float64)
    except (ValueError, TypeError):
        raise UsageError(f'{path} must hold a number or nested lists of numbers of one '
                         'shape (ragged lists, strings and objects are not arrays)') from None
    return value
