"""Every doctest in the package runs as part of the suite."""

import doctest
import importlib
import pkgutil

import pytest

import planner

MODULES = sorted(m.name[len("planner."):] for m in pkgutil.walk_packages(planner.__path__, "planner.")
                 if not m.name.endswith("__main__"))


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name):
    module = importlib.import_module(f"planner.{name}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} of {result.attempted} doctests failed in planner.{name}"


def test_the_examples_are_found():
    """The number formatting examples are doctests: a module list that lost them would pass vacuously."""
    from planner.memo import numbers as memo_numbers

    assert doctest.testmod(memo_numbers).attempted >= 2
    assert len(MODULES) >= 60  # every module of every subpackage (walk_packages, not the top level only)
