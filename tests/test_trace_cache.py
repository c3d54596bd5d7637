"""A plan whose workloads alternate between two traces reads each trace once (the red team of
this stop found one trace kept at a time: four workloads over two traces took four full reads,
one a workload, plus the validation's four)."""

from __future__ import annotations

from planner.inputs import kv_tiers
from planner.plan.build import build_plan
from planner.traffic import traces as tr
from test_redteam5_traces import _workbook, folder  # noqa: F401 (the fixture: two small traces)


def test_alternating_traces_are_read_once_each(folder, monkeypatch):  # noqa: F811
    reads = []
    real = tr.trace_reuse

    def counted(file, *args, **kwargs):
        reads.append(file.name)
        return real(file, *args, **kwargs)

    monkeypatch.setattr(tr, "trace_reuse", counted)
    monkeypatch.setattr(kv_tiers, "_CACHE", {})
    src = folder[0] / "alternating.xlsx"
    _workbook(src, ["traces dir/ü trace.jsonl.gz", "traces dir/b.jsonl"] * 2)
    plan = build_plan(src)
    assert len(plan.results) == 4
    assert sorted(reads) == ["b.jsonl", "ü trace.jsonl.gz"], reads


def test_the_newest_trace_stays_when_the_budget_is_spent(folder, monkeypatch):  # noqa: F811
    monkeypatch.setattr(kv_tiers, "_CACHE", {})
    monkeypatch.setattr(kv_tiers, "_CACHE_BYTES", 0)  # no room: only the newest is kept
    root = folder[0]
    a = kv_tiers.load_reuse(root / "traces dir" / "b.jsonl", None, 0.5)
    kv_tiers.load_reuse(root / "traces dir" / "ü trace.jsonl.gz", None, 0.5)
    assert len(kv_tiers._CACHE) == 1
    assert kv_tiers.load_reuse(root / "traces dir" / "b.jsonl", None, 0.5)[0].cum_tokens.tolist() == \
        a[0].cum_tokens.tolist()
