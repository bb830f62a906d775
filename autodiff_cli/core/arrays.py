"""Array forms of the primitives whose NumPy function differs from ieee.py.

The table (primitives.py) names each op's array form; batch.py looks the
name up here first, then in NumPy. Each function below matches its scalar
twin in ieee.py, and PyTorch, where NumPy alone would not. Imported only on
the batch path.
"""

import numpy as np


def sigmoid(x):  # PyTorch's formula, as ieee.sigmoid
    return 1.0 / (1.0 + np.exp(-x))


def relu(x):  # nan stays nan, -0.0 stays -0.0, as torch.relu
    return np.where(x < 0, 0.0, x)


# nan wins, and a tie returns the first argument (max(-0.0, 0.0) is -0.0, as
# in torch); np.minimum and np.maximum return the second.
def minimum(a, b):
    return np.where((a <= b) | np.isnan(a), a, b)


def maximum(a, b):
    return np.where((a >= b) | np.isnan(a), a, b)


def sign(x):  # torch.sgn: zero for zero and for nan
    return np.where(x > 0, 1.0, np.where(x < 0, -1.0, 0.0))


def eq(a, b):
    return np.equal(a, b).astype(np.float64)


def lt(a, b):
    return np.less(a, b).astype(np.float64)


def ge(a, b):
    return np.greater_equal(a, b).astype(np.float64)


def where(condition, a, b):
    return np.where(condition, a, b)


# ---- the language's logic (primitives.LOGIC): 1.0 or 0.0, and `if` ----

def le(a, b):
    return np.less_equal(a, b).astype(np.float64)


def gt(a, b):
    return np.greater(a, b).astype(np.float64)


def ne(a, b):
    return np.not_equal(a, b).astype(np.float64)


def logical_and(a, b):
    return np.logical_and(a != 0, b != 0).astype(np.float64)


def logical_or(a, b):
    return np.logical_or(a != 0, b != 0).astype(np.float64)


def logical_not(a):
    return np.equal(a, 0).astype(np.float64)


def select(condition, a, b):  # nan counts as true, as in the scalar `if`
    return np.where(condition != 0, a, b)


def branches(condition, g):
    """The gradient each branch of an `if` receives: the rows that take it."""
    taken = condition != 0
    return np.where(taken, g, 0.0), np.where(taken, 0.0, g)


def first(value, *rest):
    return value
