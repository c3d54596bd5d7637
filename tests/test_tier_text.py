"""The tier finding's numbers as a reader sees them (red team 4: a capacity below 1 GiB printed
"0 GiB" and a net saving of -0.3 printed "USD -0")."""

from planner.workbook.tier_worth import _gib, _money


def test_money_that_rounds_to_zero_has_no_sign():
    assert _money(-0.3) == "0"
    assert _money(0.4) == "0"
    assert _money(-0.6) == "-1"
    assert _money(-1825.0) == "-1,825"
    assert _money(73000.2) == "73,000"


def test_small_capacities_keep_their_digits():
    # 1/16 of 1 GiB is the smallest point of a Tier_Worth sweep over a 1 GiB tier.
    assert _gib(0.0625) == "0.0625"
    assert _gib(0.5) == "0.5"
    assert _gib(2.25) == "2.25"
    assert _gib(2048.0) == "2,048"
    assert _gib(12.4) == "12"
