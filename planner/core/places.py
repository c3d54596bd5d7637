"""Where a problem lies, as one structured type with one formatter and one sort order.

A :class:`Place` is a ``str`` (its formatted text: what every message shows, unchanged) that also
keeps its parts, so nothing parses a place back from its text:

========================================  ===========================================
constructor                               text
========================================  ===========================================
``Place.cell("Workloads", "J", 7)``       ``Workloads!J7``
``Place.cell_range("Workloads", 1, 3, 3, 4)`` ``Workloads!A3:C4``
``Place.at_row("Workloads", 7)``          ``Workloads row 7``
``Place.at_row("Workloads", 3, "rag")``   ``Workloads row 3 (rag)``
``Place.at_rows("Measurements", 2, 5, "x")`` ``Measurements rows 2-5 (x)``
``Place.whole("Workloads")``              ``Workloads`` (a sheet, or a file by name)
``Place.file_line("t.jsonl", 3)``         ``t.jsonl line 3`` (a line of a trace or load-test file)
``Place.file_key("vllm.json", "mean_ttft_ms")`` ``vllm.json: mean_ttft_ms`` (a key path of a JSON file)
``Place.file_key("b.jsonl", "completed", 3)`` ``b.jsonl line 3: completed`` (a key of a JSON line)
``Place.file_part("g.json", "benchmark 2 of 5")`` ``g.json benchmark 2 of 5`` (a run of a file, by its label)
``Place.within("OLD a.xlsx", inner)``     ``OLD a.xlsx: Workloads!J7`` (inner's parts kept)
``Place.file_pair("a.prom", "b.prom")``   ``a.prom -> b.prom`` (two files read as one: scrapes before and after a run)
========================================  ===========================================

>>> p = Place.cell("Workloads", "J", 7)
>>> p, p.sheet, p.row, p.column
('Workloads!J7', 'Workloads', 7, 'J')
>>> sorted([Place.at_row("Workloads", 3, "b"), Place.cell("Models", "AA", 2), Place.cell("Models", "B", 2)],
...        key=lambda q: q.order(["Models", "Workloads"]))
['Models!B2', 'Models!AA2', 'Workloads row 3 (b)']
"""

from __future__ import annotations

from typing import Any

from planner.core.refs import place_at


def column_letter(j: int) -> str:
    """Excel column letters of 1-based column ``j`` (1 -> A, 27 -> AA).

    >>> column_letter(1), column_letter(26), column_letter(27), column_letter(703)
    ('A', 'Z', 'AA', 'AAA')
    """
    out = ""
    while j > 0:
        j, r = divmod(j - 1, 26)
        out = chr(65 + r) + out
    return out


class Place(str):
    """A place in the user's input (a cell, a row, rows, a sheet, a file or a line of one).

    The parts: ``sheet`` (sheet or file name), ``row`` (first sheet row, 1-based, or None),
    ``last_row`` (the last of a row range), ``column`` (Excel letters), ``label`` (the row's name),
    ``line`` (a file's 1-based line), ``key`` (a key path inside a JSON file or line), ``outer``
    (a prefix naming the file the place is in, as the diff names OLD and NEW) and ``second`` (the
    second file of a pair read together, ``sheet`` being the first). Make one with the class
    methods; the text follows from the parts.
    """

    sheet: str
    row: int | None
    last_row: int | None
    column: str | None
    last_column: str | None
    label: str | None
    line: int | None
    key: str | None
    outer: str | None
    second: str | None

    def __new__(cls, sheet: str, row: int | None = None, column: str | None = None, label: Any = None,
                last_row: int | None = None, line: int | None = None, outer: str | None = None,
                last_column: str | None = None, key: str | None = None, second: str | None = None) -> "Place":
        sheet = str(sheet)
        second = None if second is None else str(second)
        if second is not None and (row is not None or line is not None or column is not None):
            raise ValueError("a pair of files is a place of its own: no row, line or column")
        label = None if label is None else str(label)
        if column is not None and row is not None:
            coord = f"{column}{row}" + (f":{last_column}{last_row}" if last_column is not None and last_row is not None
                                         else "")
            text = place_at(sheet, coord)  # the one maker of Sheet!A1 texts (planner.core.refs)
        elif row is not None:
            text = f"{sheet} rows {row}-{last_row}" if last_row is not None and last_row != row else \
                f"{sheet} row {row}"
            if label is not None:
                text += f" ({label})"
        elif line is not None:
            text = f"{sheet} line {line}"
        elif second is not None:  # two files read as one (Prometheus scrapes before and after a run)
            text = f"{sheet} -> {second}"
        elif label is not None:  # a part of a file named by its label (a run: "benchmark 2 of 5")
            text = f"{sheet} {label}"
        else:
            text = sheet
        if key is not None and row is None:
            text = f"{text}: {key}"
        if outer:
            text = f"{outer}: {text}" if text else outer
        self = super().__new__(cls, text)
        for k, v in (("sheet", sheet), ("row", row), ("last_row", last_row), ("column", column), ("last_column", last_column),
                     ("label", label), ("line", line), ("key", key), ("outer", outer or None), ("second", second)):
            object.__setattr__(self, k, v)
        return self

    def __setattr__(self, key, value):
        raise AttributeError("a Place is immutable")

    def __reduce__(self):  # pickling (multiprocessing) keeps the parts
        return (Place, (self.sheet, self.row, self.column, self.label, self.last_row, self.line, self.outer,
                        self.last_column, self.key, self.second))

    @classmethod
    def cell(cls, sheet: str, column: str | int, row: int) -> "Place":
        """Cell ``column`` (letters, or a 1-based index) of sheet row ``row``: ``Sheet!J7``."""
        return cls(sheet, row=int(row), column=column_letter(column) if isinstance(column, int) else column)

    @classmethod
    def cell_range(cls, sheet: str, first_col: int, first_row: int, last_col: int, last_row: int) -> "Place":
        """Cells ``first``..``last`` (1-based columns and rows): ``Sheet!A3:C4``."""
        return cls(sheet, row=int(first_row), column=column_letter(first_col), last_row=int(last_row),
                   last_column=column_letter(last_col))

    @classmethod
    def at_row(cls, sheet: str, row: int, label: Any = None) -> "Place":
        """A whole sheet row, optionally with its name: ``Sheet row 7`` or ``Sheet row 7 (name)``."""
        return cls(sheet, row=int(row), label=label)

    @classmethod
    def at_rows(cls, sheet: str, first: int, last: int, label: Any = None) -> "Place":
        """Rows ``first``-``last`` (one row when equal): ``Sheet rows 2-5 (label)``."""
        return cls(sheet, row=int(first), last_row=int(last), label=label)

    @classmethod
    def whole(cls, name: str) -> "Place":
        """A whole sheet, or a file by its name or path."""
        return cls(name)

    @classmethod
    def file_line(cls, file: str, line: int) -> "Place":
        """Line ``line`` (1-based) of a file: ``name line 3`` (as a sheet's ``Workloads row 3``)."""
        return cls(file, line=int(line))

    @classmethod
    def file_key(cls, file: str, key: str, line: int | None = None) -> "Place":
        """A key path inside a JSON file (``vllm.json: mean_ttft_ms``), or inside line ``line`` of
        a JSON-lines file (``b.jsonl line 3: completed``)."""
        return cls(file, line=None if line is None else int(line), key=str(key))

    @classmethod
    def file_part(cls, file: str, label: str) -> "Place":
        """A part of a file named by its label (a run of a sweep: ``g.json benchmark 2 of 5``)."""
        return cls(file, label=label)

    @classmethod
    def file_pair(cls, first: str, second: str) -> "Place":
        """Two files read as one, in their order (Prometheus scrapes taken before and after a run):
        ``a.prom -> b.prom``; ``sheet`` is the first, ``second`` the other."""
        return cls(first, second=second)

    def in_file(self, file: str) -> "Place":
        """The same place in the file named ``file`` (a file given by another path or name)."""
        return Place(file, self.row, self.column, self.label, self.last_row, self.line, self.outer, self.last_column,
                     self.key, self.second)

    @classmethod
    def within(cls, outer: str, inner: Any) -> "Place":
        """``inner`` (a Place or a name) inside the file named by ``outer``: ``OLD a.xlsx: Workloads!J7``."""
        p = inner if isinstance(inner, Place) else cls(str(inner))
        return cls(p.sheet, p.row, p.column, p.label, p.last_row, p.line,
                   f"{outer}: {p.outer}" if p.outer else outer, p.last_column, p.key, p.second)

    @classmethod
    def of_table(cls, table, name: str, i: int, positions: dict[str, int] | None = None) -> "Place":
        """The place of column ``name`` of record ``i`` of ``table`` (anything with ``sheet``,
        ``rows`` and ``positions``, as :class:`~planner.inputs.reader.Table`): the cell when the
        column is in the sheet, else the row. ``positions`` maps column names to 0-based sheet
        columns (default: the table's own)."""
        pos = table.positions if positions is None else positions
        if name in pos:
            return cls.cell(table.sheet, pos[name] + 1, table.rows[i])
        return cls.at_row(table.sheet, table.rows[i])

    def is_on(self, sheets) -> bool:
        """Whether the place lies on one of ``sheets`` (names, any case) of the input itself
        (not a line of a file, not inside another file)."""
        return self.outer is None and self.line is None and self.second is None and self.sheet.strip().lower() in \
            {s.lower() for s in sheets}

    def order(self, sheet_order=()) -> tuple:
        """Sort key, the one order of problems: by sheet (those of ``sheet_order`` first, in that
        order, any case; any other sheet, file or outer file after them, as listed), then row,
        then column (A < Z < AA). Equal keys keep the order they were found in (a stable sort)."""
        rank = {s.lower(): k for k, s in enumerate(sheet_order)}
        col = self.column or ""
        where = len(rank) if self.outer or self.line is not None or self.second is not None \
            else rank.get(self.sheet.lower(), len(rank))
        return (where, self.row or 0, (len(col), col))


def as_place(place: Any) -> Place:
    """``place`` as a :class:`Place`: a Place unchanged, any other text as a whole sheet or file
    named by it (never parsed)."""
    return place if isinstance(place, Place) else Place(str(place))
