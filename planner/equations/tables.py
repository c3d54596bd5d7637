"""Table-level equations of the finance and diff sheets, each a small numpy function with its Excel
twin right below (as in :mod:`planner.equations.kvhit`): counts and sums over a column, a lookup
by name, a difference, headroom, and the helpers of a waterfall chart.

The Summary (:mod:`planner.workbook.summary_sheet`), Demand_Calc
(:mod:`planner.workbook.periods_sheet`) and the diff workbook (:mod:`planner.diff.workbook`) declare
each derived cell as one of these applied to declared arguments
(:class:`planner.finance.cells.Both`): the numpy function gives the stored value, the twin the
formula, so the writers hold no formula text of their own (tests/test_one_maker.py).

A blank spreadsheet result is NaN here (``""`` in Excel); a count is an ``int``.
"""

from __future__ import annotations

import numpy as np

from planner.core.arrays import floats
from planner.core.refs import exact_criteria, exact_text
from planner.equations.kvhit import excel_twin


def _floats(x) -> np.ndarray:
    return floats(x).ravel()


# --------------------------------------------------------------------------- counts and sums
def _matches(keys, key) -> np.ndarray:
    """Which entries of ``keys`` equal ``key`` as an exact-text SUMIFS criterion does (case ignored,
    no wildcards): the row mask of :func:`sum_where`, :func:`priced_sum_where` and :func:`sum_where_all`."""
    return np.array([str(k).casefold() == str(key).casefold() for k in keys], dtype=bool)


def count_numbers(x):
    """How many cells of a column hold a number (Excel ``COUNT``; a blank is NaN).

    Parameters
    ----------
    x : array of numeric, NaN when blank [any unit]

    Returns
    -------
    int [count]
    """
    return int(np.sum(~np.isnan(_floats(x))))


@excel_twin(count_numbers)
def _(x):
    return f"COUNT({x})"


def count_filled(x):
    """How many cells of a column are not blank (Excel ``COUNTA``; here: the column's length, a
    name column has no blank row).

    Parameters
    ----------
    x : array [any]

    Returns
    -------
    int [count]
    """
    return len(x)


@excel_twin(count_filled)
def _(x):
    return f"COUNTA({x})"


def total(x):
    """Sum of a column, blanks skipped (Excel ``SUM``; 0 for none).

    Parameters
    ----------
    x : array of numeric, NaN when blank [any unit]

    Returns
    -------
    float [same unit]
    """
    x = _floats(x)
    return float(np.nansum(x)) if len(x) else 0.0


@excel_twin(total)
def _(x):
    return f"SUM({x})"


def priced_total_per_month(cost_per_hour, hours_per_month):
    r"""A column of costs per hour summed over a month; blank when no cell is priced (a blank, not a 0).

    .. math:: cost_m = \sum_i cost_{h,i} \cdot hours\_per\_month

    Parameters
    ----------
    cost_per_hour : array of numeric, NaN when unpriced [currency/h]
    hours_per_month : numeric [h/month]

    Returns
    -------
    float, NaN when none is priced [currency/month]
    """
    x = _floats(cost_per_hour)
    if not np.any(~np.isnan(x)):
        return float("nan")
    return float(np.nansum(x)) * float(hours_per_month)


@excel_twin(priced_total_per_month)
def _(cost_per_hour, hours_per_month):
    return f'IF(COUNT({cost_per_hour})=0,"",SUM({cost_per_hour})*{hours_per_month})'


def uncosted(gpus, cost):
    r"""GPUs of the rows whose cost is blank (no price): all GPUs less those of the priced rows.

    .. math:: u = \sum_i g_i - \sum_{i:\, cost_i \ge 0} g_i

    Parameters
    ----------
    gpus : array of numeric [count]
    cost : array of numeric, NaN when unpriced [currency/h]

    Returns
    -------
    float [count]
    """
    g, c = _floats(gpus), _floats(cost)
    return float(np.nansum(g) - np.nansum(np.where(c >= 0, g, 0.0)))


@excel_twin(uncosted)
def _(gpus, cost):
    return f'(SUM({gpus})-SUMIFS({gpus},{cost},">=0"))'


# --------------------------------------------------------------------------- lookups
def lookup(values, keys, key):
    """The entry of ``values`` in the row whose ``keys`` entry is ``key`` (names compared as
    :func:`position` compares them: exact text, case ignored; the first such row).

    Parameters
    ----------
    values : array [any]
    keys : array of str
    key : str

    Returns
    -------
    the entry [unit of values]
    """
    return np.asarray(values, dtype=object)[int(position(keys, [key])[0]) - 1]  # names folded as position folds them


@excel_twin(lookup)
def _(values, keys, key):
    return f"INDEX({values},MATCH({exact_text(key)},{keys},0))"


def saved(baseline, target):
    r"""What the target saves against the baseline (blank when either is blank).

    .. math:: saved = baseline - target

    Parameters
    ----------
    baseline, target : numeric, NaN when blank [count or currency/month]

    Returns
    -------
    numeric [same unit]
    """
    return np.asarray(baseline, dtype=float) - np.asarray(target, dtype=float)


@excel_twin(saved)
def _(baseline, target):
    return f'IF(AND(ISNUMBER({baseline}),ISNUMBER({target})),{baseline}-{target},"")'


def headroom(capacity, demand):
    r"""Capacity over demand, less one; blank without a demand.

    .. math:: headroom = capacity / demand - 1

    Parameters
    ----------
    capacity : numeric [tokens/min]
    demand : numeric, NaN or 0 without demand [tokens/min]

    Returns
    -------
    float, NaN without demand [fraction]
    """
    capacity, demand = float(capacity), float(demand)
    return capacity / demand - 1 if demand > 0 else float("nan")


@excel_twin(headroom)
def _(capacity, demand):
    return f'IF(IF(ISNUMBER({demand}),{demand},0)>0,{capacity}/{demand}-1,"")'


def demand_warning(with_demand, workloads):
    """The Summary's warning when workloads have no demand_tpm (issue 20: an absent demand is a
    warning, not a silent 0 GPUs); empty when every workload has one.

    Parameters
    ----------
    with_demand : int, workloads with a demand [count]
    workloads : int, all workloads [count]

    Returns
    -------
    str
    """
    if with_demand == 0:
        return "WARNING: no workload has a demand_tpm: the fleet is sized for nothing"
    if with_demand < workloads:
        return f"WARNING: {workloads - with_demand} workload(s) without demand_tpm are left out of the fleet"
    return ""


@excel_twin(demand_warning)
def _(with_demand, workloads):
    return (f'IF({with_demand}=0,"WARNING: no workload has a demand_tpm: the fleet is sized for nothing",'
            f'IF({with_demand}<{workloads},"WARNING: "&({workloads}-{with_demand})&" workload(s) without '
            'demand_tpm are left out of the fleet",""))')


def sum_where(values, keys, key):
    """Sum of ``values`` over the rows whose ``keys`` entry is ``key`` (Excel ``SUMIFS`` with an
    exact-text criterion: case ignored, no wildcards).

    Parameters
    ----------
    values : array of numeric, NaN when blank [any unit]
    keys : array of str
    key : str

    Returns
    -------
    float [unit of values]
    """
    on = _matches(keys, key)
    return total(_floats(values)[on])


@excel_twin(sum_where)
def _(values, keys, key):
    return f"SUMIFS({values},{keys},{exact_criteria(key)})"


def priced_sum_where(values, keys, key):
    """:func:`sum_where` of a cost column, blank when no row of ``key`` holds a number (no type of
    the period is priced: a blank, not a 0).

    Parameters
    ----------
    values : array of numeric, NaN when unpriced [currency/month]
    keys : array of str
    key : str

    Returns
    -------
    float, NaN when none is priced [currency/month]
    """
    on = _matches(keys, key)
    x = _floats(values)[on]
    return float(np.nansum(x)) if np.any(~np.isnan(x)) else float("nan")


@excel_twin(priced_sum_where)
def _(values, keys, key):
    return (f'IF(SUMPRODUCT(({keys}={key})*ISNUMBER({values}))=0,"",'
            f"SUMIFS({values},{keys},{exact_criteria(key)}))")


def uncosted_note(gpus):
    """The Fleet Total row's note: whether every GPU of the plan is priced.

    Parameters
    ----------
    gpus : numeric, GPUs of types without hourly_cost (:func:`uncosted`) [count]

    Returns
    -------
    str
    """
    if gpus > 0:
        return (f"Total cost covers the priced GPU types only: {gpus:,.0f} GPUs of types without hourly_cost "
                f"are not costed")
    return "Every GPU in the plan is priced: the total cost is complete"


@excel_twin(uncosted_note)
def _(gpus):
    return (f'IF({gpus}>0,"Total cost covers the priced GPU types only: "&TEXT({gpus},"#,##0")&'
            f'" GPUs of types without hourly_cost are not costed","Every GPU in the plan is priced: the total '
            f'cost is complete")')


# --------------------------------------------------------------------------- changes and waterfalls
# A waterfall chart is a stacked column chart over helper columns (planner.diff.workbook): each
# step floats on an invisible base, its rise or fall drawn on top. ``max``/``min`` below keep
# Python's order of arguments (the first when equal), so a step of 0 stores what it always did.
def change(new, old):
    r"""The change from ``old`` to ``new`` (a blank counts 0, as in an Excel subtraction).

    .. math:: \Delta = new - old

    Parameters
    ----------
    new, old : numeric, NaN when blank [any unit]

    Returns
    -------
    numeric [same unit]
    """
    return np.nan_to_num(np.asarray(new, dtype=float)) - np.nan_to_num(np.asarray(old, dtype=float))


@excel_twin(change)
def _(new, old):
    return f"{new}-{old}"


def running_total(previous, amount):
    """The waterfall's running total after a step.

    Parameters
    ----------
    previous : numeric, the running total before the step [any unit]
    amount : numeric, the step [same unit]

    Returns
    -------
    numeric [same unit]
    """
    return np.asarray(previous, dtype=float) + np.asarray(amount, dtype=float)


@excel_twin(running_total)
def _(previous, amount):
    return f"{previous}+{amount}"


def floating_base(previous, running):
    """The invisible bar a step floats on: the lower of the running totals before and after it.

    Parameters
    ----------
    previous, running : numeric [any unit]

    Returns
    -------
    numeric [same unit]
    """
    a, b = np.asarray(previous, dtype=float), np.asarray(running, dtype=float)
    return np.where(b < a, b, a) + 0.0  # + 0.0: a -0.0 is stored as 0, as a spreadsheet has it


@excel_twin(floating_base)
def _(previous, running):
    return f"MIN({previous},{running})"


def rise(amount):
    """The part of a step drawn as an increase: ``max(amount, 0)``.

    Parameters
    ----------
    amount : numeric [any unit]

    Returns
    -------
    numeric [same unit]
    """
    a = np.asarray(amount, dtype=float)
    return np.where(0.0 > a, 0.0, a) + 0.0  # + 0.0: a -0.0 step is stored as 0, as a spreadsheet has it


@excel_twin(rise)
def _(amount):
    return f"MAX({amount},0)"


def fall(amount):
    """The part of a step drawn as a decrease: ``max(-amount, 0)``.

    Parameters
    ----------
    amount : numeric [any unit]

    Returns
    -------
    numeric [same unit]
    """
    a = -np.asarray(amount, dtype=float)
    return np.where(0.0 > a, 0.0, a) + 0.0  # + 0.0: -(0.0) is -0.0; stored as 0, as MAX(-K3,0) is in a spreadsheet


@excel_twin(fall)
def _(amount):
    return f"MAX(-{amount},0)"


def bridge_check(old, steps, new):
    r"""A bridge's closing check: the first total plus the steps less the last total (0 when the
    steps account for the whole change).

    .. math:: check = old + \sum_k step_k - new

    Parameters
    ----------
    old : numeric [any unit]
    steps : array of numeric, a blank (NaN) skipped as Excel's SUM skips it [same unit]
    new : numeric [same unit]

    Returns
    -------
    float [same unit]
    """
    s = sum(float(v) for v in np.asarray(steps, dtype=float).ravel() if not np.isnan(v))  # in order, as before
    return float(old) + s - float(new)


@excel_twin(bridge_check)
def _(old, steps, new):
    return f"{old}+SUM({steps})-{new}"


# --------------------------------------------------------------------------- one row of a table
def same(x):
    """A value as it is: a cell that shows another cell (Excel: the reference itself).

    Parameters
    ----------
    x : any

    Returns
    -------
    x
    """
    return x


@excel_twin(same)
def _(x):
    return f"{x}"


def number_or_blank(x):
    """A number as it is, a blank (or text) as a blank: a copy of a cell that may be empty
    (``INDEX`` of an empty cell would read as 0).

    Parameters
    ----------
    x : numeric, NaN when blank [any unit]

    Returns
    -------
    numeric, NaN when blank [same unit]
    """
    return np.asarray(x, dtype=float)


@excel_twin(number_or_blank)
def _(x):
    return f'IF(ISNUMBER({x}),{x},"")'


def typed_or(x, fallback):
    """The typed number of an input cell, else ``fallback``: a blank (or text) cell takes the
    fall-back (a default, a Settings value, another column, a fitted or estimated value).

    The Excel twin parenthesises an expression fall-back (:func:`planner.equations.kvhit.xl_arg`):
    ``IF(ISNUMBER(x),x,(a+b))``.

    Parameters
    ----------
    x : numeric, NaN when blank [any unit]
    fallback : numeric [unit of x]

    Returns
    -------
    numeric [unit of x]
    """
    x = np.asarray(x, dtype=float)
    return np.where(np.isnan(x), fallback, x)


@excel_twin(typed_or)
def _(x, fallback):
    return f"IF(ISNUMBER({x}),{x},{fallback})"


def text_or(x, fallback):
    """The typed text of an input cell, else ``fallback`` (a text column's default).

    Parameters
    ----------
    x : array of object, a str where text is typed
    fallback : str

    Returns
    -------
    array of object
    """
    x = np.asarray(x, dtype=object)
    return np.array([v if isinstance(v, str) else fallback for v in x.ravel()], dtype=object).reshape(x.shape)


@excel_twin(text_or)
def _(x, fallback):
    return f"IF(ISTEXT({x}),{x},{fallback})"


def at_row(values, row):
    """The entries of a column at 1-based row numbers (Excel ``INDEX``).

    Parameters
    ----------
    values : array [any]
    row : array of int, 1-based [row]

    Returns
    -------
    array [unit of values]
    """
    return np.asarray(values)[np.asarray(row, dtype=int) - 1]


@excel_twin(at_row)
def _(values, row):
    return f"INDEX({values},{row})"


def position(keys, key):
    """1-based row numbers of names in a name column (Excel ``MATCH(..., 0)``: exact text, case
    ignored; the first such row; here surrounding spaces are ignored too, as the reader matches
    names, and a name column has none).

    Parameters
    ----------
    keys : array of str, the name column
    key : array of str, the names looked up

    Returns
    -------
    array of int [row]
    """
    first: dict[str, int] = {}
    for i, k in enumerate(keys):
        first.setdefault(str(k).strip().lower(), i + 1)
    return np.array([first[str(k).strip().lower()] for k in np.asarray(key, dtype=object).ravel()], dtype=int)


@excel_twin(position)
def _(keys, key):
    return f"MATCH({exact_text(key)},{keys},0)"


def largest(x):
    """The largest entry (Excel ``MAX``; blanks skipped).

    Parameters
    ----------
    x : array of numeric [any unit]

    Returns
    -------
    float [same unit]
    """
    return float(np.nanmax(np.asarray(x, dtype=float)))


@excel_twin(largest)
def _(x):
    return f"MAX({x})"


def row_of(keys, key):
    """1-based row of a number in a column of distinct numbers (Excel ``MATCH(key, keys, 0)``), e.g.
    of a rank.

    Parameters
    ----------
    keys : array of numeric
    key : numeric

    Returns
    -------
    int [row]
    """
    return int(np.flatnonzero(np.asarray(keys, dtype=float) == float(key))[0]) + 1


@excel_twin(row_of)
def _(keys, key):
    return f"MATCH({key},{keys},0)"


def both_typed_or(a, b, source):
    """``input`` when both cells hold a number (typed), else ``source``: the provenance of a pair
    of input cells a planner fills (the time breakdown t_attn0_ms and t_ffn0_ms).

    Parameters
    ----------
    a, b : numeric, NaN when blank
    source : str, where the planner's values come from

    Returns
    -------
    str
    """
    return "input" if not (np.isnan(float(a)) or np.isnan(float(b))) else source


@excel_twin(both_typed_or)
def _(a, b, source):
    return f'IF(AND(ISNUMBER({a}),ISNUMBER({b})),"input",{source})'


# --------------------------------------------------------------------------- group sums (planner.finance.aggregations)
def sum_where_all(values, *keys_and_keys):
    """Sum of ``values`` over the rows matching every criterion, given as pairs ``keys, key``
    (Excel ``SUMIFS`` with exact-text criteria: case ignored, no wildcards).

    Vectorised over the names: given arrays of names (one per group row, the same length for
    every criterion), the sums of every group at once; each name column is folded once.

    Parameters
    ----------
    values : array of numeric, NaN when blank [any unit]
    *keys_and_keys : array of str, str or array of str, ... (a name column and the name, per criterion)

    Returns
    -------
    float, or an array of one per group [unit of values]
    """
    x = _floats(values)
    pairs = list(zip(keys_and_keys[::2], keys_and_keys[1::2]))
    if all(np.ndim(key) == 0 for _keys, key in pairs):
        on = np.ones(len(x), dtype=bool)
        for keys, key in pairs:
            on &= _matches(keys, key)
        return total(x[on])
    n = max(len(np.atleast_1d(np.asarray(key, dtype=object))) for _keys, key in pairs)
    on = np.ones((n, len(x)), dtype=bool)
    for keys, key in pairs:
        folded = [str(k).casefold() for k in np.asarray(keys, dtype=object).ravel()]
        code = {f: i for i, f in reversed(list(enumerate(folded)))}
        rows = np.array([code[f] for f in folded], dtype=int)
        wanted = np.broadcast_to(np.atleast_1d(np.asarray(key, dtype=object)), (n,))
        on &= rows[None, :] == np.array([code.get(str(k).casefold(), -1) for k in wanted])[:, None]
    return np.array([total(x[on[g]]) for g in range(n)])


@excel_twin(sum_where_all)
def _(values, *keys_and_keys):
    pairs = ",".join(f"{keys},{exact_criteria(key)}" for keys, key in zip(keys_and_keys[::2], keys_and_keys[1::2]))
    return f"SUMIFS({values},{pairs})"


def priced(price, x):
    """``x`` for a priced group, blank when ``price`` is blank (a GPU type without hourly_cost).

    Parameters
    ----------
    price : numeric, NaN when blank [currency/h]
    x : numeric [currency/h or currency/month]

    Returns
    -------
    numeric, NaN without a price [unit of x]
    """
    return np.where(np.isnan(np.asarray(price, dtype=float)), np.nan, np.asarray(x, dtype=float))


@excel_twin(priced)
def _(price, x):
    return f'IF(ISNUMBER({price}),{x},"")'


def priced_scaled(price, x, factor):
    """``x · factor`` for a priced group (a cost per hour summed, per month), blank without a price.

    Parameters
    ----------
    price : numeric, NaN when blank [currency/h]
    x : numeric [currency/h]
    factor : numeric [h/month]

    Returns
    -------
    numeric, NaN without a price [currency/month]
    """
    return priced(price, np.asarray(x, dtype=float) * np.asarray(factor, dtype=float))


@excel_twin(priced_scaled)
def _(price, x, factor):
    return f'IF(ISNUMBER({price}),{x}*{factor},"")'


def times(x, factor):
    """``x · factor``.

    Parameters
    ----------
    x, factor : numeric

    Returns
    -------
    numeric
    """
    return np.asarray(x, dtype=float) * np.asarray(factor, dtype=float)


@excel_twin(times)
def _(x, factor):
    return f"{x}*{factor}"


def sum_of(*terms):
    r"""The sum of a list of terms, element by element (0 for none): a cell's ``a+b+c``.

    .. math:: s = \sum_k t_k

    The Excel twin joins the terms with ``+``, each through :func:`planner.equations.kvhit.xl_arg`
    (an expression term is parenthesised, so a term ``A1-B1`` stays one term); no term gives ``0``.
    A blank cell counts 0 in Excel's ``+``; here a blank is NaN and the sum NaN, so the callers
    pass cells that always hold a number.

    Parameters
    ----------
    *terms : numeric or arrays of one shape [one unit, the result's]

    Returns
    -------
    numeric [same unit]
    """
    if not terms:
        return np.float64(0.0)
    total = np.asarray(terms[0], dtype=float)
    for t in terms[1:]:
        total = total + np.asarray(t, dtype=float)
    return total


@excel_twin(sum_of)
def _(*terms):
    return "+".join(str(t) for t in terms) if terms else "0"


def product_of(*factors):
    r"""The product of a list of factors, element by element (1 for none): a cell's ``a*b*c``.

    .. math:: p = \prod_k f_k

    The Excel twin joins the factors with ``*``, each through :func:`planner.equations.kvhit.xl_arg`
    (an expression factor such as ``A1+B1`` is parenthesised: without it ``2*A1+B1`` would mean
    ``(2*A1)+B1``); no factor gives ``1``.

    Parameters
    ----------
    *factors : numeric or arrays of one shape [units multiply]

    Returns
    -------
    numeric [the product of the units]
    """
    if not factors:
        return np.float64(1.0)
    out = np.asarray(factors[0], dtype=float)
    for f in factors[1:]:
        out = out * np.asarray(f, dtype=float)
    return out


@excel_twin(product_of)
def _(*factors):
    return "*".join(str(f) for f in factors) if factors else "1"


def priced_total(x):
    """Sum of the priced entries of a column; blank when none is priced (a blank, not a 0).

    Parameters
    ----------
    x : array of numeric, NaN when unpriced [any unit]

    Returns
    -------
    float, NaN when none is priced [same unit]
    """
    x = _floats(x)
    return float(np.nansum(x)) if np.any(~np.isnan(x)) else float("nan")


@excel_twin(priced_total)
def _(x):
    return f'IF(COUNT({x})=0,"",SUM({x}))'


# --------------------------------------------------------------------------- the Explorer and the Checks sheet
def shown_when(selector, kind, x):
    """``x`` when ``selector`` is ``kind``, else blank (a quantity of the other attention kind).

    Parameters
    ----------
    selector : str, e.g. the chosen model's attention
    kind : str
    x : any

    Returns
    -------
    x, or NaN
    """
    return x if str(selector) == str(kind) else float("nan")


@excel_twin(shown_when)
def _(selector, kind, x):
    return f'IF({selector}={kind},{x},"")'


def kind_total(kinds, counts, kind):
    """Sum of the counts of the checks of one kind (Excel ``SUMIF``).

    Parameters
    ----------
    kinds : array of str, ``error`` or ``warning`` per check
    counts : array of numeric, rows found per check, NaN when blank [count]
    kind : str

    Returns
    -------
    float [count]
    """
    return float(sum(float(c) for k, c in zip(kinds, counts)
                     if str(k) == str(kind) and not np.isnan(float(c))))  # a blank count skipped, as SUMIF


@excel_twin(kind_total)
def _(kinds, counts, kind):
    return f"SUMIF({kinds},{kind},{counts})"


def master_status(kinds, counts):
    """``OK`` when every error check finds 0 rows, else ``ERROR`` (also when a count is an error value).

    Parameters
    ----------
    kinds : array of str
    counts : array of numeric [count]

    Returns
    -------
    str
    """
    return "OK" if kind_total(kinds, counts, "error") == 0 else "ERROR"


@excel_twin(master_status)
def _(kinds, counts):
    return f'IF(IFERROR(SUMIF({kinds},"error",{counts}),1)=0,"OK","ERROR")'


def check_status(count, kind):
    """One check's status: ``OK`` at 0 rows, else ``FAIL`` (an error check) or ``WARN``.

    Parameters
    ----------
    count : numeric, rows found [count]
    kind : str, ``error`` or ``warning``

    Returns
    -------
    str
    """
    return "OK" if count == 0 else ("FAIL" if kind == "error" else "WARN")


@excel_twin(check_status)
def _(count, kind):
    return f'IF({count}=0,"OK",IF({kind}="error","FAIL","WARN"))'
