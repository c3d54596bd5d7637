"""Problems found in an input workbook, each naming its place."""

from __future__ import annotations

from dataclasses import dataclass

from planner.core.places import Place, as_place

MAX_LISTED = 200  # a longer list is cut here, with the count of the rest


@dataclass(frozen=True)
class Problem:
    place: Place  # a Place (text "Workloads!J7", "Workloads row 7 (name)", ...); other text is a sheet or file name
    message: str

    def __post_init__(self):
        object.__setattr__(self, "place", as_place(self.place))

    def __str__(self) -> str:
        return f"{self.place}: {self.message}"


class InputError(Exception):
    """The input workbook is wrong; ``problems`` lists everything found at once."""

    def __init__(self, problems: list[Problem]):
        self.problems = list(problems)
        super().__init__("\n".join(self.lines()))

    def lines(self, limit: int = MAX_LISTED) -> list[str]:
        shown = [str(p) for p in self.problems[:limit]]
        rest = len(self.problems) - limit
        if rest > 0:
            shown.append(f"... and {rest} more problem{'s' if rest != 1 else ''} not listed")
        return shown
