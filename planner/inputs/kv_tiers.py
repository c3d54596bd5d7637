"""KV-cache tiers and trace-derived hit ratios in the plan (issue 19).

A workload with a ``trace`` (Workloads column, a path relative to the input workbook's
folder) gets its hit ratio from the trace's LRU hit curve (:mod:`planner.traffic.traces`) at the
capacities of the tiers of the optional ``Tiers`` sheet, nested fastest first (hbm, dram,
ssd, remote; sheet order within a kind):

- capacity of a tier, as the traced traffic's cache sees it: ``capacity_gib``; an ``hbm`` row
  with a blank capacity is the HBM left after weights and peak KV on every GPU of the
  instance, ``max(0, hbm_headroom_gib) x tp``. Without a Tiers sheet a traced workload has that
  HBM prefix cache only.
- the curve as a function of capacity in GiB: ``capacity_blocks x block_size x S x tp / 2^30``
  (S x tp: the KV bytes per token of the whole instance, all its GPUs). It is a stored table
  on the ``Hit_Curve`` sheet, exact at its points (0, then 8 points per doubling up to every
  distinct block, where it reaches its ceiling); the hit at a tier capacity is the linear
  interpolation between the two points around it at the whole blocks the tiers hold (each tier's
  capacity floored to blocks, :func:`planner.equations.tiers.whole_blocks_gib`), in Python and in the
  workbook alike, so a live edit of a capacity recalculates to what a fresh run gives.
- tier ``t`` serves ``h_t = H(c_1 + ... + c_t) - H(c_1 + ... + c_{t-1})`` (an exclusive
  hierarchy with LRU demotion behaves as one LRU of the summed capacity);
  ``hit_target = sum h_t`` when the Workloads cell is blank (a typed hit_target wins).
- KV load: ``T_load = sum over tiers of h_t N S / B_t``, HBM hits loading nothing, with
  ``B_t = read_gbps`` (blank: the workload's typed kv_gbps, else its GPU's pcie_gbps). The plan
  carries it as the effective bandwidth of a hit, ``kv_gbps = hit / sum_t(h_t / B_t)`` in
  Resolved, so ``load_ms = hit N S / kv_gbps`` is that sum exactly; when every hit is in HBM
  the effective bandwidth is :data:`NO_LOAD_GBPS` (a load below 1e-270 ms).
- tier cost per month: ``capacity_gib x cost_per_gib_month x units``, units = instances_needed
  (scope instance), ``ceil(gpus_needed / gpus_per_node)`` (node), 1 (pool).

The trace is taken as the traffic that reaches one cache hierarchy: for instance-scope tiers
one instance's traffic (session-affine routing), for node or pool tiers that node's or pool's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from planner.equations.tiers import NO_LOAD_GBPS, curve_hit, effective_kv_gbps, hbm_free_gib, whole_blocks_gib  # noqa: F401 (NO_LOAD_GBPS importable from here)
from planner.core import schema
from planner.core.places import Place
from planner.traffic import traces as tr
from planner.core.errors import Problem

KIND_ORDER = {"hbm": 0, "dram": 1, "ssd": 2, "remote": 3}
POINTS_PER_DOUBLING = 8
# NO_LOAD_GBPS (every hit served from HBM: nothing to load) is planner.equations.tiers's, importable from here
GIB = 2.0 ** 30

_CACHE: dict[tuple, tuple[tr.Reuse, list[str]]] = {}  # insertion order: the oldest first
_CACHE_BYTES = 256 * 2**20  # the cumulated curves of the traces kept at once [B]: 8 B a distinct block


def trace_path(input_path: Path, text: str) -> Path:
    """The trace file a ``trace`` cell names, relative to the workbook's folder. A path typed with
    Windows separators (``traces\\day1.jsonl.gz``, a workbook made on Windows) is read with ``/``
    where the system's separator is ``/`` and the path as typed names no file (a backslash is a
    legal character of a POSIX file name, so the name as typed is tried first); see
    :func:`windows_separators`."""
    raw = str(text).strip()
    p = _relative_to(input_path, Path(raw))
    if windows_separators(input_path, raw):
        return _relative_to(input_path, Path(raw.replace("\\", "/")))
    return p


def _relative_to(input_path: Path, p: Path) -> Path:
    return p if p.is_absolute() else Path(input_path).resolve().parent / p


def windows_separators(input_path: Path, text: str) -> bool:
    """True when the ``trace`` text is read with ``/`` for its backslashes (:func:`trace_path`)."""
    import os

    raw = str(text).strip()
    return os.sep == "/" and "\\" in raw and not _relative_to(input_path, Path(raw)).exists() \
        and _relative_to(input_path, Path(raw.replace("\\", "/"))).exists()


def load_reuse(file: Path, block_size: int | None, warmup: float) -> tuple[tr.Reuse, list[str]]:
    """The trace's one-pass reuse, cached by (file, size, mtime, block size, warm-up)."""
    st = file.stat()
    key = (str(file.resolve()), st.st_size, st.st_mtime_ns, block_size, float(warmup))
    if key not in _CACHE:
        _CACHE[key] = tr.trace_reuse(file, block_size, warmup)  # read and passed at once (bounded memory)
        # the newest trace always stays; older ones while the curves together stay within _CACHE_BYTES
        # (a plan's workloads over two traces read each once, not once a workload: red team 5)
        while len(_CACHE) > 1 and sum(r.cum_tokens.nbytes for r, _ in _CACHE.values()) > _CACHE_BYTES:
            del _CACHE[next(iter(_CACHE))]
    return _CACHE[key]


def _cell(table, name: str, i: int) -> Place:
    return Place.of_table(table, name, i)


def check_inputs(path, tiers, workloads, wpos, settings, problems: list[Problem], notes: list[str]) -> None:
    """Tiers rows (unique names, one hbm row at most, a capacity for every other kind) and every
    Workloads trace (found, readable, well formed: its problems at ``file line N``)."""
    if tiers is not None:
        seen: dict[str, int] = {}
        hbm_rows = []
        for i, rec in enumerate(tiers.records):
            name = rec.get("tier")
            if name is not None:
                key = str(name).strip().lower()
                if key in seen:
                    problems.append(Problem(_cell(tiers, "tier", i), f"tier {name!r} duplicates row "
                                                                     f"{tiers.rows[seen[key]]}"))
                else:
                    seen[key] = i
            if rec.get("kind") not in (None, "hbm") and rec.get("scope") is None and (rec.get("cost_per_gib_month") or 0) > 0:
                # the blank's default sets the tier's cost (per instance, not per node or once): said (red team 5)
                notes.append(f"{_cell(tiers, 'scope', i)}: scope is blank, read as instance: every serving instance "
                             f"buys its own {float(rec.get('capacity_gib') or 0):g} GiB of tier {name!r}; type node or pool if it is "
                             f"shared")
            if rec.get("kind") == "hbm":
                hbm_rows.append(i)
            elif rec.get("kind") is not None and rec.get("capacity_gib") is None \
                    and not any(p.place == _cell(tiers, "capacity_gib", i) for p in problems):
                problems.append(Problem(_cell(tiers, "capacity_gib", i),
                                        f"capacity_gib is required for a {rec.get('kind')} tier (only an hbm "
                                        f"tier may leave it blank: HBM left after weights and peak KV)"))
        for i in hbm_rows[1:]:
            problems.append(Problem(_cell(tiers, "kind", i), f"a second hbm tier (the first is row "
                                                             f"{tiers.rows[hbm_rows[0]]}): the GPU's HBM is one tier"))
        kinds = [i for i, rec in enumerate(tiers.records) if rec.get("kind") is not None]
        if kinds and not hbm_rows:
            # tiers_of nests the declared rows only: without an hbm row the GPU's own prefix cache had
            # capacity 0, so a DRAM-only sheet lost the HBM hits and loaded them all from DRAM
            problems.append(Problem(_cell(tiers, "kind", kinds[0]),
                                    "the Tiers sheet has no hbm row, so the GPU's own prefix cache would be left "
                                    "out of every traced workload (its hits served, and loaded, by the slower "
                                    "tiers): add an hbm row (capacity_gib blank: the HBM left after weights and "
                                    "peak KV; 0 to leave it out on purpose)"))
    if workloads is None or "trace" not in workloads.positions:
        return
    warmup = float(settings.get("trace_warmup", tr.DEFAULT_WARMUP))
    for i, rec in enumerate(workloads.records):
        text = rec.get("trace")
        if text is None or not str(text).strip():
            continue
        where = _cell(workloads, "trace", i)
        file = trace_path(Path(path), text)
        if not file.is_file():
            problems.append(Problem(where, f"trace {str(text)!r} not found: looked for {file} (a trace path is "
                                           f"relative to the folder of the workbook naming it, "
                                           f"{Path(path).resolve().parent}; an output workbook planned or diffed "
                                           f"from another folder needs the trace copied beside it, or an absolute "
                                           f"path in this cell)"))
            continue
        try:
            reuse, tnotes = load_reuse(file, rec.get("trace_block_size"), warmup)
        except tr.TraceError as exc:
            problems.append(Problem(where, f"trace {str(text)!r} is not a Mooncake or Bailian JSONL trace:"))
            problems.extend(exc.problems)
            continue
        if reuse.requests > 0 and reuse.warmup_requests >= reuse.requests:
            # nothing counted: the hit ratio would be 0/0, planned as 0 (red team 5)
            problems.append(Problem(where, f"trace {str(text)!r}: Settings trace_warmup {warmup:g} makes every one of "
                                           f"its {reuse.requests:,} requests a warm-up request, so no request is "
                                           f"counted and its hit ratio would be 0: type a trace_warmup below 1 "
                                           f"(0.5: kvcache-ai's simulator)"))
            continue
        notes.extend(f"{where}: {n}" for n in tnotes)
        if windows_separators(Path(path), text):
            notes.append(f"{where}: trace '{str(text).strip()}' is read with '/' for its Windows separators: {file}")
        if rec.get("hit_target") is not None:
            notes.append(f"{where}: hit_target is typed, so it wins over the trace (the Tier_Hits and "
                         f"Hit_Curve sheets still show what the trace gives)")


# --------------------------------------------------------------------------- the numbers
@dataclass
class Tier:
    name: str
    kind: str
    capacity_gib: float | None  # as typed (None: hbm from the headroom)
    scope: str
    read_gbps: float | None
    cost_per_gib_month: float
    row: int                    # 0-based row of the Tiers table (None: the implicit HBM tier)


def tiers_of(p_in) -> list[Tier]:
    """The declared tiers fastest first; without a Tiers sheet, the HBM prefix cache alone."""
    t = p_in.optional.get(schema.TIERS)
    if t is None or not t.records:  # no sheet, or the template's empty one
        return [Tier("HBM prefix cache", "hbm", None, "instance", None, 0.0, None)]
    rows = [Tier(str(r["tier"]), r["kind"], r.get("capacity_gib"), r.get("scope") or "instance",
                 r.get("read_gbps"), float(r.get("cost_per_gib_month") or 0.0), i)
            for i, r in enumerate(t.records)]
    return sorted(rows, key=lambda x: KIND_ORDER[x.kind])


def grid_blocks(unique_blocks: int) -> np.ndarray:
    """0, then ``POINTS_PER_DOUBLING`` capacities per doubling up to every distinct block [blocks]."""
    if unique_blocks <= 0:
        return np.array([0.0, 1.0])
    k = np.arange(0, int(math.ceil(math.log2(unique_blocks) * POINTS_PER_DOUBLING)) + 1)
    pts = np.unique(np.round(2.0 ** (k / POINTS_PER_DOUBLING)))
    pts = pts[pts < unique_blocks]
    return np.concatenate(([0.0], pts, [float(unique_blocks)]))


def interp(x, xs: np.ndarray, ys: np.ndarray):
    """Linear interpolation in a stored curve, flat beyond its ends: :func:`planner.equations.tiers.curve_hit`
    (the workbook's twin), at capacity ``x`` [GiB] in capacities ``xs`` [GiB] with hit ratios ``ys``."""
    return curve_hit(x, xs, ys, len(xs))


@dataclass
class WorkloadTiers:
    """One traced workload: its curve and its hits by tier."""

    i: int                       # row of the workload (0-based)
    workload: str
    trace: str                   # as typed
    block_size: int
    reuse: tr.Reuse
    kv_bytes_instance: float     # S x tp [B/token]
    hbm_free_gib: float          # max(0, headroom) x tp [GiB]
    grid: np.ndarray             # [blocks]
    grid_gib: np.ndarray
    grid_hit: np.ndarray
    capacity_gib: np.ndarray     # per tier [GiB]
    bandwidth_gbps: np.ndarray   # per tier [GB/s] (hbm: nan)
    hits: np.ndarray             # per tier [fraction]
    typed_hit: bool              # hit_target typed: it wins, the tiers do not set the load
    base_kv_gbps: float

    @property
    def hit(self) -> float:
        return float(self.hits.sum())

    @property
    def hit_hbm(self) -> float:
        return float(sum(h for h, b in zip(self.hits, self.bandwidth_gbps) if np.isnan(b)))

    @property
    def load_per_gbps(self) -> float:
        """sum over loaded tiers of h_t / B_t [1 / (GB/s)]."""
        return float(sum(h / b for h, b in zip(self.hits, self.bandwidth_gbps) if not np.isnan(b)))

    @property
    def kv_gbps_eff(self) -> float:
        return float(effective_kv_gbps(self.hit, self.load_per_gbps, self.base_kv_gbps))


@dataclass
class TierPlan:
    tiers: list[Tier]
    workloads: list[WorkloadTiers] = field(default_factory=list)
    warmup: float = tr.DEFAULT_WARMUP


def hits_at(w: WorkloadTiers, capacity_gib: np.ndarray) -> np.ndarray:
    """Hit by tier at these tier capacities [GiB each]: differences of the curve at the sums."""
    # each tier holds whole blocks (planner.traffic.traces.capacity_blocks): the curve is read at them
    whole = whole_blocks_gib(np.asarray(capacity_gib, dtype=float), w.block_size, w.kv_bytes_instance)
    cum = np.cumsum(whole)
    h = interp(cum, w.grid_gib, w.grid_hit)
    return np.diff(np.concatenate(([0.0], h)))


def apply(p_in, resolved, results) -> TierPlan | None:
    """Hit ratios and effective KV bandwidths of the traced workloads, set into ``resolved``."""
    wl = p_in.workloads
    rows = [i for i, r in enumerate(wl.records) if r.get("trace") and str(r.get("trace")).strip()]
    if not rows:
        return None
    warmup = float(p_in.settings.get("trace_warmup", tr.DEFAULT_WARMUP))
    tiers = tiers_of(p_in)
    plan = TierPlan(tiers, warmup=warmup)
    for i in rows:
        rec = wl.records[i]
        r, _ = load_reuse(trace_path(p_in.path, rec["trace"]), rec.get("trace_block_size"), warmup)
        s_inst = float(results["kv_bytes_per_token_gpu"].iat[i]) * float(resolved["tp"].iat[i])
        hbm_free = float(hbm_free_gib(float(results["hbm_headroom_gib"].iat[i]), float(resolved["tp"].iat[i])))
        g = grid_blocks(r.unique_blocks)
        g_gib = g * r.block_size * s_inst / GIB
        g_hit = tr.hit_curve(r, g)
        base_bw = float(rec["kv_gbps"]) if rec.get("kv_gbps") is not None else float(resolved["pcie_gbps"].iat[i])
        caps = np.array([hbm_free if (t.kind == "hbm" and t.capacity_gib is None) else float(t.capacity_gib)
                         for t in tiers])
        bws = np.array([np.nan if t.kind == "hbm" else float(t.read_gbps if t.read_gbps is not None else base_bw)
                        for t in tiers])
        w = WorkloadTiers(i, str(rec["workload"]), str(rec["trace"]), r.block_size, r, s_inst, hbm_free, g, g_gib,
                          g_hit, caps, bws, np.zeros(len(tiers)), rec.get("hit_target") is not None, base_bw)
        w.hits = hits_at(w, caps)
        plan.workloads.append(w)
        if not w.typed_hit:
            resolved.loc[resolved.index[i], "hit_target"] = w.hit
            resolved.loc[resolved.index[i], "kv_gbps"] = w.kv_gbps_eff
    return plan
