"""Settings keys that name no setting but look like one (red team 6, issue 20's "silent misreads").

A Settings row whose key is not a setting is kept as a note row (``p_in.settings_extra``), and its
value changes nothing. That is right for a note (``owner``, ``comment``), and silently wrong for a
key typed the way a reader writes it: ``target_utilisation`` (British spelling) 0.8 left the plan at
the default ``target_utilization`` 1, 20% fewer GPUs, exit 0 and no message; ``hours_per_mnth``,
``demand_grwth`` the same. Such a key is refused at its cell with the setting it probably meant,
as a header close to a column's name is (:func:`planner.inputs.header_units.near_miss_headers`).

A key close to a setting that the sheet also has under its own name is left alone (two rows, one of
them a note), and so is a key with a blank value (nothing would have been read).
"""

from __future__ import annotations

import difflib
from typing import Any, Sequence

from planner.core.errors import Problem
from planner.core.places import Place

# how alike a typed key and a setting's name must be (difflib's ratio, 2 M / T): 0.85 takes one
# letter changed, dropped or added in the shortest keys (``periods``/``period`` 0.92,
# ``hit_step``/``hit_stp`` 0.93) and British spellings (``target_utilisation`` 0.94), and leaves
# unrelated note keys (``owner``, ``notes``, ``source``) well below it
NEAR = 0.85


def _fold(key: str) -> str:
    """British to American spelling of the settings' words (``utilisation`` -> ``utilization``)."""
    return key.replace("isation", "ization").replace("ise_", "ize_")


def near_setting(key: str, names: Sequence[str]) -> str | None:
    """The setting ``key`` (normalised, not itself a setting) most probably means, or None.

    Parameters
    ----------
    key : str
        A Settings key as normalised by the reader (lower case, spaces as ``_``).
    names : sequence of str
        The settings' names (``planner.core.schema.SETTING_KEYS``).
    """
    folded = _fold(key)
    if folded in names:
        return folded
    best, score = None, NEAR
    for name in names:
        r = difflib.SequenceMatcher(None, folded, name).ratio()
        if r >= score:
            best, score = name, r
    return best


def near_key_problems(extras: Sequence[tuple[str, Any, Any, Place]], present: set[str],
                      names: Sequence[str], defaults: dict[str, Any]) -> list[Problem]:
    """Problems for the Settings rows whose key looks like a setting the sheet lacks.

    Parameters
    ----------
    extras : sequence of (normalised key, key as typed, value, place of the key cell)
        The rows whose key named no setting.
    present : set of str
        The settings typed under their own names.
    names, defaults
        The settings' names and default values.
    """
    out: list[Problem] = []
    for key, typed, value, where in extras:
        if value is None or (isinstance(value, str) and not value.strip()):
            continue
        meant = near_setting(key, names)
        if meant is None or meant in present:
            continue
        default = defaults.get(meant)
        shown = f" {default:g}" if isinstance(default, float) else f" {default!r}" if default not in (None, "", ()) else ""
        out.append(Problem(where, f"key {str(typed).strip()!r} is not a Settings key; it looks like {meant}: "
                                  f"rename it {meant!r} (as typed, its value {value!r} would be ignored and "
                                  f"{meant} left at its default{shown}), or give it another name to keep it "
                                  f"as a note row"))
    return out


# --------------------------------------------------------------------------- a unit typed in the key
# (red team 7) A Settings key with a unit in brackets is read as the setting, the unit dropped: right when it
# is the setting's own unit (``hours_per_month (h)``), silently wrong when not (``hours_per_month (days)`` 30
# planned as 30 hours; ``prefill_layer_ms (us)`` 150 as 150 ms). The settings with a unit, and its spellings:
SETTING_UNITS: dict[str, tuple[str, frozenset[str]]] = {
    "hours_per_month": ("h", frozenset({"h", "hr", "hrs", "hour", "hours", "h/month", "hours/month", "h/mo",
                                        "h per month", "hours per month"})),
    "pcie_sweep_gbps": ("GB/s", frozenset({"gb/s", "gbps", "gbyte/s", "gb per s"})),
    "prefill_layer_ms": ("ms", frozenset({"ms", "msec", "milliseconds"})),
    "prefill_request_ms": ("ms", frozenset({"ms", "msec", "milliseconds"})),
    "max_num_batched_tokens": ("tokens", frozenset({"tokens", "token", "tok"})),
    "gpus_per_node": ("GPUs", frozenset({"gpus", "gpu", "count"})),
}


def key_unit_problem(key: str, typed_key: str) -> str | None:
    """The problem of a unit typed in a Settings key that is not its setting's (None: no unit, or its own)."""
    from planner.inputs.header_units import header_unit

    unit = header_unit(typed_key)
    if unit is None or key not in SETTING_UNITS:
        return None
    own, spellings = SETTING_UNITS[key]
    if unit.strip().lower() in spellings:
        return None
    return (f"key {typed_key.strip()!r} says {unit}, but {key} is in {own}: the value would be read as {own} with "
            f"the unit dropped; convert the value to {own} and write the key as {key!r}")
