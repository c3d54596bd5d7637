"""The fleet's per-workload equations, each a small vectorised function with its Excel twin
right below (as in :mod:`planner.equations.kvhit`): a given value or a fallback, cost per hour,
capacity, per month and per year. The Results sheet declares the helper columns built from
them (:data:`planner.plan.columns.RESULTS`); the fleet totals are in :mod:`planner.finance.fleet`.
"""

from __future__ import annotations


import numpy as np

from planner.equations.constants import C, N
from planner.equations.kvhit import excel_twin


# --------------------------------------------------------------------------- per-workload helpers
def given_or(given, fallback):
    """``given`` where it is a number, else ``fallback`` (e.g. a measured TPM, else the model's).

    Parameters
    ----------
    given : numeric, NaN when blank [any unit]
    fallback : numeric [same unit]

    Returns
    -------
    numeric [same unit]
    """
    given = np.asarray(given, dtype=float)
    return np.where(np.isnan(given), np.asarray(fallback, dtype=float), given)


@excel_twin(given_or)
def _(given, fallback):
    return f"IF(ISNUMBER({given}),{given},{fallback})"


def cost_per_hour(gpus, hourly_cost):
    r"""Cost of a workload's GPUs per hour, NaN without demand or price.

    .. math:: cost_h = gpus\_needed \cdot hourly\_cost

    Parameters
    ----------
    gpus : numeric, GPUs of the workload, NaN without demand [count]
    hourly_cost : numeric, price of one GPU-hour, NaN when blank [currency/h]

    Returns
    -------
    numeric [currency/h]
    """
    return np.asarray(gpus, dtype=float) * np.asarray(hourly_cost, dtype=float)


@excel_twin(cost_per_hour)
def _(gpus, hourly_cost):
    return f'IF(AND(ISNUMBER({gpus}),ISNUMBER({hourly_cost})),{gpus}*{hourly_cost},"")'


def capacity_tpm(instances, tpm):
    r"""Delivered tokens/min of the sized instances at full speed, NaN without demand.

    .. math:: capacity = instances\_needed \cdot TPM_{del}(h_t)

    Parameters
    ----------
    instances : numeric, serving instances, NaN without demand [count]
    tpm : numeric, delivered TPM of one instance [tokens/min]

    Returns
    -------
    numeric [tokens/min]
    """
    return np.asarray(instances, dtype=float) * np.asarray(tpm, dtype=float)


@excel_twin(capacity_tpm)
def _(instances, tpm):
    return f'IF(ISNUMBER({instances}),{instances}*{tpm},"")'


def per_month(per_hour, hours_per_month):
    r"""A cost per hour over a month, NaN stays NaN.

    Parameters
    ----------
    per_hour : numeric [currency/h]
    hours_per_month : numeric [h/month]

    Returns
    -------
    numeric [currency/month]
    """
    return np.asarray(per_hour, dtype=float) * hours_per_month


@excel_twin(per_month)
def _(per_hour, hours_per_month):
    return f'IF(ISNUMBER({per_hour}),{per_hour}*{hours_per_month},"")'


def per_year(per_month_, months_per_year=C.MONTHS_PER_YEAR):
    """A cost per month over a year [currency/year], NaN stays NaN."""
    return np.asarray(per_month_, dtype=float) * months_per_year


@excel_twin(per_year)
def _(per_month_, months_per_year=N.MONTHS_PER_YEAR):
    return f'IF(ISNUMBER({per_month_}),{per_month_}*{months_per_year},"")'


def gpu_cost_per_month(gpus, hourly_cost, hours_per_month):
    r"""Cost of GPUs over a month, blank without demand or price.

    .. math:: cost_m = gpus \cdot hourly\_cost \cdot hours\_per\_month

    Parameters
    ----------
    gpus : numeric, NaN without demand [count]
    hourly_cost : numeric, price of one GPU-hour, NaN when blank [currency/h]
    hours_per_month : numeric [h/month]

    Returns
    -------
    numeric [currency/month]
    """
    return np.asarray(gpus, dtype=float) * np.asarray(hourly_cost, dtype=float) * hours_per_month


@excel_twin(gpu_cost_per_month)
def _(gpus, hourly_cost, hours_per_month):
    return f'IF(AND(ISNUMBER({gpus}),ISNUMBER({hourly_cost})),{gpus}*{hourly_cost}*{hours_per_month},"")'
