"""The sum and product twins the KV tiers sheets are built from (issue 21: Tier_Hits and Tier_Worth
no longer glue ``+`` / ``*`` text). Every expected number is worked by hand in the test; the text
checks say where a parenthesis must appear (an expression term stays one term).

The workbook side (the same twins in Tier_Hits, Tier_Worth, Tier_Value and Hit_Curve, recalculated
by LibreOffice) is tests/test_kv_tiers.py::test_recalculated_tier_cells_and_live_edit_equal_a_fresh_run.
"""

from __future__ import annotations

import numpy as np
import pytest

from planner.equations import tables as tb
from planner.equations import tiers


def test_sum_of_parenthesises_expression_terms_only():
    assert tb.sum_of.xl("$A2", "B2-C2", "D2*E2", "SUM(F:F)") == "$A2+(B2-C2)+(D2*E2)+SUM(F:F)"
    # without the parentheses "1-(B2-C2)" would read 1-B2-C2: the term's sign would flip C2
    assert tb.sum_of.xl("-A1") == "(-A1)"
    assert tb.sum_of.xl() == "0" and tb.product_of.xl() == "1"


def test_product_of_parenthesises_a_sum_factor():
    # 2*(A1+B1), not 2*A1+B1 (which Excel reads (2*A1)+B1)
    assert tb.product_of.xl("2", "A1+B1") == "2*(A1+B1)"
    assert tb.product_of.xl("$J2", 'IF(ISNUMBER(Tiers!$F2),Tiers!$F2,0)', "1") == \
        "$J2*IF(ISNUMBER(Tiers!$F2),Tiers!$F2,0)*1"


def test_sum_and_product_values_by_hand():
    assert float(tb.sum_of(0.25, 0.125, 0.5)) == 0.875
    assert np.array_equal(tb.sum_of([1.0, 2.0], [10.0, 20.0]), [11.0, 22.0])
    assert float(tb.sum_of()) == 0.0 and float(tb.product_of()) == 1.0
    assert float(tb.product_of(2.0, 3.0, 4.0)) == 24.0


def test_load_per_gbps_by_hand():
    # DRAM serves 20 % of the input at 10 GB/s, SSD 10 % at 4 GB/s:
    # L = 0.2/10 + 0.1/4 = 0.02 + 0.025 = 0.045 per GB/s; B_eff = (0.2+0.1)/0.045 = 6.667 GB/s
    assert float(tiers.load_per_gbps([0.2, 0.1], [10.0, 4.0])) == pytest.approx(0.045, rel=1e-15)
    assert tiers.load_per_gbps.xl(["$P2", "$T2"], ["$Q2", "$U2"]) == "($P2/$Q2)+($T2/$U2)"
    # an expression bandwidth stays the divisor as a whole: h/(B1+B2), not h/B1+B2
    assert tiers.load_per_gbps.xl(["H1"], ["B1+B2"]) == "(H1/(B1+B2))"
    assert tiers.load_per_gbps.xl([], []) == "0" and float(tiers.load_per_gbps([], [])) == 0.0
    with pytest.raises(ValueError, match="2 hits but 1 bandwidths"):
        tiers.load_per_gbps.xl(["a", "b"], ["c"])


def test_tier_cost_and_the_tiers_cost_by_hand():
    # 2 GiB of DRAM per instance at 3 a GiB-month on 4 instances: 24 a month; plus 8 GiB of SSD per
    # node at 0.5 on 1 node: 4; together 28
    dram, ssd = tiers.tier_cost(2.0, 3.0, 4.0), tiers.tier_cost(8.0, 0.5, 1.0)
    assert float(dram) == 24.0 and float(ssd) == 4.0
    assert float(tiers.tiers_cost(dram, ssd)) == 28.0 and float(tiers.tiers_cost()) == 0.0
    assert tiers.tiers_cost.xl(tiers.tier_cost.xl("$J2", "P1", "U1"), tiers.tier_cost.xl("$N2", "P2", "U2")) == \
        "($J2*P1*U1)+($N2*P2*U2)"
    # net of the tier's cost: 30 saved less 28 bought is 2
    assert float(tiers.net_saving(30.0, 28.0)) == 2.0
    assert tiers.net_saving.xl("$I2", "J2+K2") == "$I2-(J2+K2)"


def test_hits_and_capacities_by_hand():
    # tiers 1..2 together hold 1/512 + 2/512 GiB = 3/512; the curve there gives 0.5, tier 1 alone 0.3:
    # tier 2 serves 0.5 - 0.3 = 0.2
    assert float(tiers.hits_upto_capacity(1 / 512, 2 / 512)) == 3 / 512
    assert float(tiers.served_by(0.5, 0.3)) == pytest.approx(0.2, rel=1e-15)
    assert tiers.served_by.xl("$M2", 0) == "$M2-0"
    assert float(tiers.total_hit(0.3, 0.2, 0.1)) == pytest.approx(0.6, rel=1e-15)
    assert tiers.total_hit.xl() == "0"
    # a GiB bought: 2 GiB x 4 instances + 8 GiB x 1 node = 16
    assert float(tiers.bought_gib([2.0, 8.0], [4.0, 1.0])) == 16.0
    assert tiers.bought_gib.xl(["D7", "D17"], ["V7", "V17"]) == "(D7*V7)+(D17*V17)"


def test_curve_gib_by_hand():
    # 64 blocks of 16 tokens at 131,072 B/token (Llama-3.1-8B, fp16, tp 1: 32 layers x 8 heads x 128 x 2 x 2)
    # = 134,217,728 B = 0.125 GiB
    assert float(tiers.curve_gib(64, 16, 131072)) == 0.125
    assert tiers.curve_gib.xl("B10", "Tier_Hits!$C$2", "Tier_Hits!$E$2") == \
        "B10*Tier_Hits!$C$2*Tier_Hits!$E$2/c_bytes_per_gib"
