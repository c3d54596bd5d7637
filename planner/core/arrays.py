"""Numbers as float arrays, the two ways the planner reads them, written once.

>>> floats([1, 2.5]).tolist(), coerced_floats([1, "x", None, "2"]).tolist()
([1.0, 2.5], [1.0, nan, nan, 2.0])
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def floats(x) -> np.ndarray:
    """``x`` (a number, a sequence, an array, a Series) as a float array; a value that is no number
    raises (the equations' inputs are numbers or NaN already)."""
    return np.asarray(x, dtype=float)


def coerced_floats(x) -> np.ndarray:
    """``x`` (a sequence or a Series, of any values) as a float array, NaN where a value is no
    number (a blank cell, a text): :func:`pandas.to_numeric` with ``errors="coerce"``. A Series of
    numbers already (a NumPy bool, integer or float dtype) has nothing to coerce: its values, copied, as
    the coercion would give them, without the round trip through objects."""
    if isinstance(x, pd.Series) and isinstance(x.dtype, np.dtype) and x.dtype.kind in "biuf":
        return np.array(x.to_numpy(), dtype=float)
    return pd.to_numeric(pd.Series(x, dtype=object), errors="coerce").to_numpy(dtype=float)
