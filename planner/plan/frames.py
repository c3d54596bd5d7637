"""One data path from frames to the arrays the model's functions take."""

from __future__ import annotations

import numpy as np
import pandas as pd


def column_arrays(*frames: pd.DataFrame) -> dict[str, np.ndarray]:
    """Every column of ``frames`` as an array (numeric columns as float, others as they are);
    a name in a later frame replaces the same name of an earlier one.

    >>> a = column_arrays(pd.DataFrame({"x": [1, 2], "w": ["a", "b"]}), pd.DataFrame({"x": [3.5, 4]}))
    >>> a["x"].tolist(), a["w"].tolist()
    ([3.5, 4.0], ['a', 'b'])
    """
    out: dict[str, np.ndarray] = {}
    for frame in frames:
        for c, col in frame.items():  # column by column without frame[c]'s lookup of the name
            out[c] = col.to_numpy(dtype=float) if pd.api.types.is_numeric_dtype(col) else col.to_numpy()
    return out
