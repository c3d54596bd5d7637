"""Places in the user's input workbook, formatted one way for every message: ``Sheet!J7`` for
a cell of a known column, ``Sheet row 7`` when the column is not in the sheet."""

from __future__ import annotations

from planner.core.refs import place


def cell_place(table, name: str, i: int, positions: dict[str, int] | None = None) -> str:
    """The place of column ``name`` of record ``i`` of ``table`` (a :class:`~planner.inputs.reader.Table`).

    ``positions`` maps column names to 0-based sheet columns (default: the table's own)."""
    pos = table.positions if positions is None else positions
    if name in pos:
        return place(table.sheet, table.rows[i], pos[name])
    return f"{table.sheet} row {table.rows[i]}"
