"""The version of the planner (one place: the package, the Run sheet, the memo and the CLI read it)."""

__version__ = "0.1.0"
