"""An array value from a file, for a binding such as W=@w.npy.

`.npy` is read with allow_pickle=False, so a file of objects is refused,
never run; `.json` holds nested lists of numbers; `.csv` and `.tsv` hold
numbers, no header: one row or one column is a vector, else a matrix.
Every value is float64, with at most 3 axes and no empty one; a single
number is a float, as a number on the command line is.
"""

from ..errors import UsageError

MAX_AXES = 3


def read_array(path):
    """The float64 array in the file at `path`; a UsageError naming it otherwise."""
    import warnings

    import numpy as np
    suffix = path.rsplit('.', 1)[-1].lower() if '.' in path else ''
    try:
        with warnings.catch_warnings():   # loadtxt warns of an empty file: said below, once
            warnings.simplefilter('ignore')
            value = _read(path, suffix, np)
    except OSError as error:
        raise UsageError(f'cannot read {path}: {error.strerror or error}') from None
    except RecursionError:   # json's decoder nests a call per '['
        raise UsageError(f'cannot read {path}: its lists are nested too deeply') from None
    except (ValueError, UnicodeDecodeError, EOFError) as error:
        if suffix == 'npy':   # a truncated or foreign file: not numpy's hint to unpickle it
            raise UsageError(f'cannot read {path}: not a .npy file of numbers (objects, a '
                             'truncated file, or another format)') from None
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise UsageError(f'cannot read {path}: {first}') from None
    value = np.asarray(value, dtype=np.float64)
    if value.ndim > MAX_AXES:
        raise UsageError(f'{path} holds an array of {value.ndim} axes; adgrad takes at most '
                         f'{MAX_AXES}')
    if value.size == 0:
        raise UsageError(f'{path} holds an empty array')
    return float(value) if value.ndim == 0 else value


def _read(path, suffix, np):
    """The file's numbers as NumPy holds them (any dtype of numbers)."""
    if suffix == 'npy':
        value = np.load(path, allow_pickle=False)
        if value.dtype.kind not in 'biuf':
            raise UsageError(f'{path} holds {value.dtype} values, not numbers')
        return value
    if suffix == 'json':
        import json
        with open(path, encoding='utf-8') as f:
            return _numbers(json.load(f), path)
    if suffix in ('csv', 'tsv', 'txt'):
        delimiter = '\t' if suffix == 'tsv' else ','
        value = np.loadtxt(path, delimiter=delimiter, dtype=np.float64, ndmin=2,
                           encoding='utf-8')
        return value.ravel() if 1 in value.shape else value
    raise UsageError(f"cannot tell what {path} holds: name it .npy, .json, .csv or .tsv")


def _numbers(data, path):
    """Nested lists of JSON numbers as an array; ragged or non-numeric ones refused
    (null, true and "1" too, which NumPy would take as nan, 1 and 1)."""
    import numpy as np
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(item)
        elif type(item) not in (int, float):
            stack = None
            break
    try:
        if stack is None:
            raise TypeError
        value = np.array(data, dtype=np.float64)
    except (ValueError, TypeError, OverflowError):
        raise UsageError(f'{path} must hold a number or nested lists of numbers of one '
                         'shape (ragged lists, strings and objects are not arrays)') from None
    return value
