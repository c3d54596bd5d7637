"""Resolved declared once (planner.plan.columns.RESOLVED_RULES): one rule per column gives both
its Python values and its Excel formula, so the special cases cannot drift apart in order.

Hand-checked case, one GPU without pcie_gbps (pcie_gen 5) and one with pcie_gbps 32, one
MLA model without kv_heads, one workload with blanks where the rules fill:
- pcie_gbps blank, gen 5 -> c_pcie_gen5_gbps = 50 GB/s (planner/equations/constants.py);
  kv_gbps blank -> pcie_gbps;
- max_seq_len blank -> isl + osl = 1000 + 100 = 1100;
- hit_baseline blank -> hit_measured 0.3;
- target_utilization blank -> Settings 0.8 (given), demand_growth blank -> the schema's 0.0;
- batch blank, no concurrency -> the HBM fit: 671e9 params x 2 B / tp 8 = 156.2 GiB of weights per
  GPU > 141 GiB, so no request fits and the floor 1 holds (planner.equations.queueing.default_batch);
  weight_bytes blank -> its default 2; attention "mla" as typed;
- hourly_cost blank (optional, no default) -> blank; kv_heads blank on an MLA model -> 0.
The recalculated Resolved sheet of the example equals Python's (tests/test_recalc.py).
"""

from __future__ import annotations

import math

import pandas as pd

from planner.plan import columns as cols

MODELS = pd.DataFrame([{"model": "m", "layers": 61, "kv_heads": None, "head_dim": None, "kv_bytes": 1,
                        "attention": "mla", "mla_kv_dim": 576, "params_b": 671, "weight_bytes": None}])
GPUS = pd.DataFrame([{"gpu": "g5", "hbm_gib": 141, "pcie_gbps": None, "pcie_gen": 5, "hourly_cost": None},
                     {"gpu": "g", "hbm_gib": 80, "pcie_gbps": 32.0, "pcie_gen": 4, "hourly_cost": 2.0}])
WL = pd.DataFrame([{"workload": "w", "model": "m", "gpu": "g5", "tp": 8, "isl": 1000, "osl": 100,
                    "hit_measured": 0.3, "hit_target": 0.6, "t_attn0_ms": 1.0, "t_ffn0_ms": 2.0}])


def test_rules_fill_the_blanks_as_hand_checked():
    out = cols.resolve(MODELS, GPUS, WL, {"target_utilization": 0.8})
    r = out.iloc[0]
    assert (r["model_row"], r["gpu_row"]) == (1, 1)
    assert r["pcie_gbps"] == 50.0 and r["kv_gbps"] == 50.0
    assert r["max_seq_len"] == 1100
    assert r["hit_baseline"] == 0.3
    assert r["target_utilization"] == 0.8 and r["demand_growth"] == 0.0
    assert r["batch"] == 1 and r["attention"] == "mla" and r["weight_bytes"] == 2
    assert math.isnan(r["hourly_cost"]) and r["kv_heads"] == 0.0
    assert r["breakdown_source"] == "input"


def test_each_column_has_one_rule_and_the_formula_follows_it():
    ref, wl, table = (lambda n: f"R.{n}"), (lambda n: f"W.{n}"), (lambda s, n: f"T.{s}.{n}")
    f = {rc.name: cols.resolved_formula(rc, ref, wl, table) for rc in cols.RESOLVED}
    assert f["pcie_gbps"] == ("IF(ISNUMBER(INDEX(T.GPUs.pcie_gbps,R.gpu_row)),INDEX(T.GPUs.pcie_gbps,R.gpu_row),"
                              "IF(INDEX(T.GPUs.pcie_gen,R.gpu_row)=5,c_pcie_gen5_gbps,c_pcie_gen4_gbps))")
    assert f["kv_gbps"] == "IF(ISNUMBER(W.kv_gbps),W.kv_gbps,R.pcie_gbps)"
    # an expression fall-back in parentheses (the twin planner.equations.tables.typed_or)
    assert f["max_seq_len"] == "IF(ISNUMBER(W.max_seq_len),W.max_seq_len,(R.isl+R.osl))"
    assert f["target_utilization"] == "IF(ISNUMBER(W.target_utilization),W.target_utilization,s_target_utilization)"
    assert f["batch"].startswith("IF(ISNUMBER(W.batch),W.batch,IF(ISNUMBER(R.concurrency),R.concurrency,MAX(1,MIN(")
    assert f["batch"].endswith(",c_max_num_seqs))))")
    assert f["attention"] == "IF(ISTEXT(INDEX(T.Models.attention,R.model_row)),INDEX(T.Models.attention,R.model_row),d_attention)"
    assert f["hourly_cost"] == 'IF(ISNUMBER(INDEX(T.GPUs.hourly_cost,R.gpu_row)),INDEX(T.GPUs.hourly_cost,R.gpu_row),"")'
    assert f["tp"] == "W.tp"
    assert f["kv_heads"] == "IF(ISNUMBER(INDEX(T.Models.kv_heads,R.model_row)),INDEX(T.Models.kv_heads,R.model_row),0)"
    # every rule is some column's, and the first applicable rule is the one both sides use
    used = {cols.resolved_rule(rc).what for rc in cols.RESOLVED}
    assert used == {rule.what for rule in cols.RESOLVED_RULES}
