"""The catalog fills a Models/GPUs row's blank cells into a new record: the record the reader
read is not written into (issue 21: the boundary's respellings make new records, and the
catalog's fill was the last write into a record read; red team 6 / boundary 6 noticed it)."""

from planner.inputs.catalog_fill import fill_table
from planner.inputs.reader import Table


def test_filled_row_is_a_new_record_and_the_typed_one_is_unchanged():
    typed = {"model": "Llama-3.1-70B", "catalog": None, "layers": None, "kv_bytes": None}
    table = Table("Models", [typed], [2])
    before = dict(typed)
    problems, notes = [], []
    fill_table(table, "Models", problems, notes)
    assert problems == []
    assert typed == before                      # the record read keeps the values as typed
    filled = table.records[0]
    assert filled is not typed
    assert filled["layers"] == 80                # Llama 3.1 70B: 80 layers (its config.json)
    assert filled["kv_bytes"] == 2               # the catalog model's default BF16 KV cache
    assert "layers" in table.filled[0] and "kv_bytes" in table.filled[0]


def test_a_row_with_nothing_to_fill_keeps_its_record():
    typed = {"model": "my-own-model", "catalog": None, "layers": 4}
    table = Table("Models", [typed], [2])
    fill_table(table, "Models", [], [])
    assert table.records[0] is typed and table.filled == [{}]
