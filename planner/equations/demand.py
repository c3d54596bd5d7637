"""The equations of the plan by period, each a small vectorised function with its Excel twin
right below (as in :mod:`planner.equations.kvhit`): a demand typed in tokens per minute, hour or
day, in tokens per minute; today's demand grown by a rate; a typed demand unit or the default;
and what the hit target saves (:func:`planner.equations.tables.saved`). Used by
:mod:`planner.finance.periods` (the Demand_Calc and Fleet_By_Period values) and
:mod:`planner.workbook.periods_sheet` (their formulas).
"""

from __future__ import annotations

import numpy as np

from planner.equations.kvhit import excel_twin
from planner.equations.tables import saved  # noqa: F401 (Fleet_By_Period's saved column)

# minutes per unit of the Demand sheet's demand_unit
MINUTES_PER = {"tokens/min": 1.0, "tokens/hour": 60.0, "tokens/day": 1440.0}
DEFAULT_UNIT = "tokens/min"


def demand_per_minute(value, unit):
    r"""A demand typed in tokens per minute, hour or day, in tokens per minute.

    .. math:: D_{min} = D / u, \quad u = 1, 60, 1440 \text{ for min, hour, day}

    Parameters
    ----------
    value : numeric, NaN when blank [tokens/unit]
    unit : str or array of str, ``tokens/min``, ``tokens/hour`` or ``tokens/day``

    Returns
    -------
    numeric [tokens/min]
    """
    u = np.vectorize(lambda x: MINUTES_PER.get(str(x), 1.0), otypes=[float])(np.asarray(unit, dtype=object))
    return np.asarray(value, dtype=float) / u


@excel_twin(demand_per_minute)
def _(value, unit):
    return (f'IF(ISNUMBER({value}),{value}/IF({unit}="tokens/day",1440,IF({unit}="tokens/hour",60,1)),"")')


def grown_demand(typed, base, growth, k):
    r"""The period's demand: typed when given, else today's demand grown ``k`` periods.

    .. math:: D_k = D_0 \cdot (1 + g)^k

    Parameters
    ----------
    typed : numeric, the Demand row's demand, NaN when blank [tokens/min]
    base : numeric, Workloads demand_tpm, NaN when blank [tokens/min]
    growth : numeric, demand_growth per period [fraction/period]
    k : numeric, index of the period in Settings periods, NaN when not one of them [count]

    Returns
    -------
    numeric, NaN when neither is given [tokens/min]
    """
    typed, k = np.asarray(typed, dtype=float), np.asarray(k, dtype=float)
    grown = np.asarray(base, dtype=float) * (1.0 + np.asarray(growth, dtype=float)) ** k
    grown = np.where(np.isnan(k), np.nan, grown)  # 1 ** NaN is 1 in numpy: not one of the periods
    return np.where(np.isnan(typed), grown, typed)


@excel_twin(grown_demand)
def _(typed, base, growth, k):
    return (f'IF(ISNUMBER({typed}),{typed},IF(AND(ISNUMBER({base}),ISNUMBER({k})),'
            f'{base}*(1+{growth})^{k},""))')


def unit_or_default(unit):
    """A Demand row's demand_unit as the formulas compare it (trimmed, lower case), or
    ``tokens/min`` when it is not text.

    Parameters
    ----------
    unit : str or array of str, NaN or None when blank

    Returns
    -------
    array of str
    """
    u = np.asarray(unit, dtype=object)
    return np.vectorize(lambda x: x.strip().lower() if isinstance(x, str) else DEFAULT_UNIT, otypes=[object])(u)


@excel_twin(unit_or_default)
def _(unit):
    return f'IF(ISTEXT({unit}),LOWER(TRIM({unit})),"{DEFAULT_UNIT}")'

