"""The Calibration sheet's twins (planner/equations/ttft_fit.py), by hand. Their formulas in the
sheet are recalculated in LibreOffice by tests/test_calib_workbook.py."""

from __future__ import annotations

import pytest

from planner.equations import ttft_fit as tf


def test_fitted_law_parts_by_hand():
    # k_attn 1e-6 ms/tok^2, k_ffn 0.05 ms/tok, N 1000, h 0.5:
    # 1e-6 * 1000^2 * (1 - 0.25) + 0.05 * 1000 * (1 - 0.5) = 0.75 + 25 = 25.75 ms
    assert float(tf.fitted_compute_ms(1000, 0.5, 1e-6, 0.05)) == pytest.approx(25.75, rel=1e-15)
    assert float(tf.attn0_ms(1e-6, 1000)) == pytest.approx(1.0, rel=1e-15)   # 1e-6 * 1000^2
    assert float(tf.ffn0_ms(0.05, 1000)) == pytest.approx(50.0, rel=1e-15)   # 0.05 * 1000
    # a hit costs c_hit once per request with hits: 15 + 3 at h 0.2, 15 at h 0
    assert float(tf.fixed_with_hit_cost(15.0, 3.0, 0.2)) == 18.0 and float(tf.fixed_with_hit_cost(15.0, 3.0, 0.0)) == 15.0
    assert float(tf.decode_ms(200, 7.5)) == 1500.0                               # 200 tokens x 7.5 ms
    assert float(tf.request_alone_ms(160.0, 1.6)) == pytest.approx(100.0, rel=1e-15)
    assert float(tf.relative_error(110.0, 100.0)) == pytest.approx(0.1, rel=1e-12)
    assert list(tf.abs_error([-0.2, 0.1])) == [0.2, 0.1]
    assert tf.median_abs_error([0.3, 0.1, 0.2]) == 0.2 and tf.max_abs_error([0.3, 0.1, 0.2]) == 0.3


def test_fitted_law_text():
    assert tf.fitted_compute_ms.xl("$C5", "$D5", "$H$3", "$I$3") == "$H$3*$C5^2*(1-$D5^2)+$I$3*$C5*(1-$D5)"
    assert tf.fixed_with_hit_cost.xl("$F$3", "$G$3", "$D5") == "$F$3+$G$3*($D5>0)"
    # an expression hit stays whole inside ^2 and (1-h): (1-(A1+B1)^2), not (1-A1+B1^2)
    assert tf.fitted_compute_ms.xl("N", "A1+B1", "k", "f") == "k*N^2*(1-(A1+B1)^2)+f*N*(1-(A1+B1))"
    assert tf.request_alone_ms.xl("Measurements!$F8", "2.5") == "Measurements!$F8/2.5"
