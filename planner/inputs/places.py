"""Places in the user's input workbook, formatted one way for every message: ``Sheet!J7`` for
a cell of a known column, ``Sheet row 7`` when the column is not in the sheet (the type and its
one formatter and sort order: :class:`planner.core.places.Place`)."""

from __future__ import annotations

from planner.core.places import Place


def cell_place(table, name: str, i: int, positions: dict[str, int] | None = None) -> Place:
    """The place of column ``name`` of record ``i`` of ``table`` (a :class:`~planner.inputs.reader.Table`).

    ``positions`` maps column names to 0-based sheet columns (default: the table's own)."""
    return Place.of_table(table, name, i, positions)
