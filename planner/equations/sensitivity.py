"""The sweep helpers of the sensitivity tables (:mod:`planner.plan.sensitivity`), each a small
numpy function with its Excel twin right below (as in :mod:`planner.equations.kvhit`): the
tornado's driver picked by number (``CHOOSE``), moved by ±swing and clamped, put in place of
the planned value on its own rows, the bar's width and its rank within the workload's block.
"""

from __future__ import annotations

import numpy as np

from planner.equations.constants import C, N
from planner.equations.kvhit import excel_twin, xl_arg


# --------------------------------------------------------------------------- helper quantities
def choose(k, *values):
    """The k-th (1-based) of ``values``, per row (Excel CHOOSE).

    Parameters
    ----------
    k : int array, 1-based index
    values : numeric arrays, the candidates

    Returns
    -------
    numeric
    """
    k = np.asarray(k, dtype=int)
    stacked = np.stack([np.broadcast_to(np.asarray(v, dtype=float), k.shape) for v in values])
    return np.take_along_axis(stacked, (k - 1)[None, ...], axis=0)[0]


@excel_twin(choose)
def _(k, *values):
    return f"CHOOSE({k},{','.join(values)})"


def block_sheet(index, k, per):
    r"""The sheet (1-based: the first, ``_2``, ...) of a long table cut into sheets of ``per`` rows that holds the
    block of the workload at 1-based ``index``, ``k`` rows a workload (planner.workbook.layout.Chunks).

    .. math:: \lfloor (index - 1) k / per \rfloor + 1

    Parameters
    ----------
    index : int array, the workload's 1-based row
    k : int, rows a workload
    per : int, rows a sheet (a multiple of k)

    Returns
    -------
    int array
    """
    return np.floor((np.asarray(index, dtype=float) - 1) * k / per).astype(int) + 1


@excel_twin(block_sheet)
def _(index, k, per):
    return f"INT(({xl_arg(index)}-1)*{xl_arg(k)}/{xl_arg(per)})+1"


def block_row(index, k, per, point_row):
    r"""The sheet row (1-based, header row 1) of a point of that block: ``point_row`` is the point's row within a
    block that starts at row 2 (2 for the first point).

    .. math:: ((index - 1) k \bmod per) + point\_row

    Parameters
    ----------
    index : int array, the workload's 1-based row
    k, per : int, as :func:`block_sheet`
    point_row : int array, 2 + the point's 0-based number

    Returns
    -------
    int array
    """
    return np.mod((np.asarray(index, dtype=int) - 1) * k, per) + np.asarray(point_row, dtype=int)


@excel_twin(block_row)
def _(index, k, per, point_row):
    return f"MOD(({xl_arg(index)}-1)*{xl_arg(k)},{per})+{xl_arg(point_row)}"


def vary(base, direction, swing, upper):
    r"""A driver moved by ±swing, clamped to [0, upper].

    .. math:: x = \min(upper, \max(0, base (1 + direction \cdot swing)))

    Parameters
    ----------
    base : numeric, the driver's planned value
    direction : numeric, -1 (low case) or +1 (high case)
    swing : numeric, relative move [fraction]
    upper : numeric, upper bound, NaN for none (1 for ratios)

    Returns
    -------
    numeric, the moved value
    """
    x = np.maximum(0.0, np.asarray(base, dtype=float) * (1 + np.asarray(direction) * swing))
    upper = np.asarray(upper, dtype=float)
    return np.where(np.isnan(upper), x, np.minimum(upper, x))


@excel_twin(vary)
def _(base, direction, swing, upper):
    x = f"MAX(0,{base}*(1+{direction}*{swing}))"
    return f"IF(ISNUMBER({upper}),MIN({upper},{x}),{x})"


def override(driver, name, value, base):
    """``value`` on the rows that vary ``name``, the planned ``base`` elsewhere.

    Parameters
    ----------
    driver : str array, the driver each row varies
    name : str, this column's driver name
    value : numeric, the varied value
    base : numeric, the planned value

    Returns
    -------
    numeric
    """
    return np.where(np.asarray(driver) == name, value, base)


@excel_twin(override)
def _(driver, name, value, base):
    return f"IF({driver}={name},{value},{base})"


def swing_of(low, high):
    """Width of a tornado bar: |TPM(high) - TPM(low)| [tokens/min]."""
    return np.abs(np.asarray(high, dtype=float) - low)


@excel_twin(swing_of)
def _(low, high):
    return f"ABS({high}-{low})"


def rank_in_blocks(swing, k: int):
    r"""Rank of each swing within its block of k drivers: 1 for the widest, ties ranked by
    driver order.

    .. math:: rank_i = 1 + \#\{j: s_j - s_i > \epsilon\} + \#\{j < i: |s_j - s_i| \le \epsilon\}

    Swings closer than ``c_swing_tolerance`` tie: drivers whose swings are mathematically
    equal (``isl`` and ``alpha`` often are) differ by a few ulps depending on the order of
    operations, and a second spreadsheet engine would otherwise rank them the other way
    round. Plain arithmetic on the ranges (no function applied to a range inside
    SUMPRODUCT), so every engine evaluates it as an array.

    Parameters
    ----------
    swing : numeric array, n x k swings in driver order [tokens/min]
    k : int, drivers per workload

    Returns
    -------
    numeric array, ranks [1..k]
    """
    s = np.asarray(swing, dtype=float).reshape(-1, k)
    d = s[:, None, :] - s[:, :, None]  # d[b, i, j] = s_j - s_i
    tie = (d <= C.SWING_TOLERANCE) & (-d <= C.SWING_TOLERANCE)
    greater = (d > C.SWING_TOLERANCE).sum(axis=2)
    earlier_tie = (tie & (np.arange(k)[None, :] < np.arange(k)[:, None])[None]).sum(axis=2)
    return (1 + greater + earlier_tie).reshape(-1).astype(float)


def rank_in_blocks_xl(block: str, me: str) -> str:
    """Excel twin of :func:`rank_in_blocks` for one cell ``me`` of the range ``block``."""
    tol = N.SWING_TOLERANCE
    return (f"1+SUMPRODUCT((({block}-{me})>{tol})+(({block}-{me})<={tol})*(({me}-{block})<={tol})"
            f"*(ROW({block})<ROW({me})))")
