"""Typed inputs as a checker types them (red team 5).

One statistic, two names: the issue 16 text names Measurements ``ttft_stat`` values ``mean``,
``median``, ``p90``, ``p99`` and Workloads ``slo_percentile`` p50/p90/...; the schema took
``median`` for one and ``p50`` for the other only, so a checker who typed ``median`` for a target
(or ``p50`` for a measured TTFT) got ``is not one of``. The 50th percentile is the median by
definition, so each reads as the other's name; anything else is still refused.
"""

from __future__ import annotations

import pytest

from planner.core import schema
from planner.inputs.cells import parse_cell

SLO = schema.column(schema.W, "slo_percentile")
STAT = schema.column(schema.MEAS, "ttft_stat")


@pytest.mark.parametrize("typed, want", [("median", "p50"), (" Median ", "p50"), ("P50", "p50"), ("p90", "p90"),
                                         ("average", "mean"), ("avg", "mean")])
def test_slo_percentile_names(typed, want):
    assert parse_cell(SLO, typed, None)[:2] == (want, None)


@pytest.mark.parametrize("typed, want", [("p50", "median"), ("MEDIAN", "median"), ("p99", "p99"),
                                         ("Average", "mean")])
def test_ttft_stat_names(typed, want):
    assert parse_cell(STAT, typed, None)[:2] == (want, None)


@pytest.mark.parametrize("col, typed", [(SLO, "p75"), (STAT, "p95"), (SLO, "med"), (STAT, "max")])
def test_other_statistics_are_still_refused(col, typed):
    v, err, _ = parse_cell(col, typed, None)
    assert v is None and "is not one of" in err
