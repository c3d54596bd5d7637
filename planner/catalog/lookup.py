"""Model and GPU catalogs shipped with the package (README "Catalogs"): lookup by name.

``planner/catalog/data/models.json`` and ``planner/catalog/data/gpus.json`` hold one entry per model or GPU,
each citing its source (the model's ``config.json``, the vendor's datasheet). Filling the blank
cells of an input table from an entry is the input boundary's job
(:mod:`planner.inputs.catalog_fill`).

Matching (:func:`find`):

* models: case-insensitive, with or without the organisation prefix
  (``meta-llama/Llama-3.1-70B-Instruct`` = ``Llama-3.1-70B-Instruct``), spaces and underscores
  read as hyphens, the entry's aliases too; then base/instruct variants of one architecture
  (``-Instruct``, ``-Base``, ``-Chat``, ``-it`` dropped on both sides). A version is part of
  the name: ``Mistral-7B-v0.1`` is not ``Mistral-7B-v0.3``, ``DeepSeek-V2`` is not
  ``DeepSeek-V3`` (issue 17): a name that differs from an entry only in its trailing version
  (or lacks it) is not filled; the message names the entry as a did-you-mean
  (:func:`version_hint`);
* GPUs: case, spaces, hyphens and underscores ignored (``h100-sxm`` = ``H100 SXM``), and a
  leading vendor name (``NVIDIA H200``).
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any


MODEL, GPU = "model", "gpu"
SHEET_OF = {MODEL: "Models", GPU: "GPUs"}
KIND_OF = {"Models": MODEL, "GPUs": GPU}
LABEL = {MODEL: "model catalog", GPU: "GPU catalog"}

# catalog field -> schema column (1:1 names; every one a declared column of its sheet)
MODEL_FIELDS = ("attention", "layers", "kv_heads", "head_dim", "mla_kv_dim", "params_b", "heads",
                "hidden_size", "intermediate_size", "active_params_b", "experts", "experts_per_token")
GPU_FIELDS = ("hbm_gib", "pcie_gbps", "pcie_gen", "hbm_tbps", "bf16_tflops", "fp8_tflops")
FIELDS = {MODEL: MODEL_FIELDS, GPU: GPU_FIELDS}
CATALOG_KV_BYTES = 2  # kv_bytes blank on a catalog model: a BF16/FP16 KV cache (said in a note)

_VARIANT_TOKENS = frozenset({"instruct", "base", "chat", "it", "hf"})
_VERSION = re.compile(r"-v\d+(\.\d+)*$")
_VENDORS = ("nvidia", "amd", "instinct")


@dataclass(frozen=True)
class Entry:
    """One catalog entry: its name, the values of its fields and where they come from."""

    kind: str                      # "model" or "gpu"
    name: str
    values: dict[str, Any]         # schema column -> value (None: the catalog does not give it)
    source: str
    aliases: tuple[str, ...] = ()
    org: str = ""                  # organisation (models) or vendor (GPUs)
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)  # the whole entry

    @property
    def names(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)

    def provenance(self) -> str:
        """Where a filled value came from: ``catalog: <entry> (<source>)``."""
        return f"catalog: {self.name} ({self.source})"


# --------------------------------------------------------------------------- loading
def _load(kind: str) -> tuple[Entry, ...]:
    fname, key = ("models.json", "models") if kind == MODEL else ("gpus.json", "gpus")
    text = resources.files("planner.catalog").joinpath("data", fname).read_text(encoding="utf-8")
    out = []
    for rec in json.loads(text)[key]:
        values = {f: rec.get(f) for f in FIELDS[kind]}
        org = rec.get("org") if kind == MODEL else rec.get("vendor")
        out.append(Entry(kind, str(rec["name"]), values, str(rec.get("source") or ""),
                         tuple(str(a) for a in rec.get("aliases") or ()), str(org or ""), dict(rec)))
    return tuple(out)


@cache
def entries(kind: str) -> tuple[Entry, ...]:
    """Every entry of the ``"model"`` or ``"gpu"`` catalog, in file order (loaded once)."""
    if kind not in FIELDS:
        raise ValueError(f"kind must be {MODEL!r} or {GPU!r}, not {kind!r}")
    return _load(kind)


# --------------------------------------------------------------------------- matching
def model_key(name: str) -> str:
    """``' meta-llama/Llama 3.1_70B-Instruct '`` -> ``'llama-3.1-70b-instruct'``."""
    text = str(name).strip().lower().rsplit("/", 1)[-1]
    return re.sub(r"[\s_\-]+", "-", text).strip("-")


def _variant_key(key: str) -> str:
    """A model key without its base/instruct marks: ``llama-3.1-70b-instruct`` -> ``llama-3.1-70b``."""
    return "-".join(t for t in key.split("-") if t not in _VARIANT_TOKENS)


def gpu_key(name: str) -> str:
    """``' H100-SXM_5 '`` -> ``'h100sxm5'``: case, spaces, hyphens and underscores ignored."""
    return re.sub(r"[\s_\-]+", "", str(name).lower())


def _gpu_vendorless(key: str) -> str:
    for v in _VENDORS:
        if key.startswith(v) and len(key) > len(v):
            key = key[len(v):]
    return key


@cache
def _index(kind: str) -> tuple[dict[str, Entry], ...]:
    """Lookup tables, most exact first: each maps a normalised name to the first entry with it."""
    levels: list[dict[str, Entry]] = [{}, {}]
    for e in entries(kind):
        for n in e.names:
            for level, key in zip(levels, _keys(n, kind)):
                level.setdefault(key, e)
    return tuple(levels)


def _keys(name: Any, kind: str) -> tuple[str, ...]:
    """The matching keys of a name, most exact first (the same for catalog names and typed ones)."""
    if kind == MODEL:
        k = model_key(name)
        return k, _variant_key(k)
    k = gpu_key(name)
    return k, _gpu_vendorless(k)


def name_key(name: Any, kind: str) -> str:
    """A model or GPU name folded as the catalog folds the names it matches, without merging
    variants: ``meta-llama/Llama-3.1-8B-Instruct`` = ``llama 3.1_8b-instruct``; ``H100-SXM`` =
    ``NVIDIA H100 SXM`` (two spellings of one thing, e.g. OLD's and NEW's in ``planner diff``)."""
    return _keys(name, kind)[0] if kind == MODEL else _keys(name, kind)[1]


def find(name: Any, kind: str) -> Entry | None:
    """The catalog entry ``name`` names (see the module docstring for the rules), or None."""
    if name is None or not str(name).strip():
        return None
    for level, key in zip(_index(kind), _keys(name, kind)):
        if key in level:
            return level[key]
    return None


def closest(name: Any, kind: str, n: int = 3) -> list[str]:
    """Up to ``n`` catalog names most like ``name`` (difflib), for messages; aliases count
    but the entry's own name is returned."""
    norm = model_key if kind == MODEL else gpu_key
    by_key: dict[str, str] = {}
    for e in entries(kind):
        for alias in e.names:
            by_key.setdefault(norm(alias), e.name)
    out: list[str] = []
    for key in difflib.get_close_matches(norm(name), list(by_key), n=4 * n, cutoff=0.5):
        if by_key[key] not in out:
            out.append(by_key[key])
    return out[:n]


def version_hint(name: Any) -> list[str]:
    """Catalog models that differ from ``name`` only in the trailing version (``-v0.3``,
    ``-V3``) or its absence: never filled from, named in the message instead."""
    want = _VERSION.sub("", _variant_key(model_key(name)))
    out: list[str] = []
    for e in entries(MODEL):
        if any(_VERSION.sub("", _variant_key(model_key(n))) == want for n in e.names) and e.name not in out:
            out.append(e.name)
    return out


def closest_text(name: Any, kind: str) -> str:
    """``"closest: 'A', 'B'"`` or a pointer to ``planner catalog`` when nothing is close; a
    catalog model of another version is named first, as not the same model."""
    if kind == MODEL and (other := version_hint(name)):
        return f"did you mean {' or '.join(repr(x) for x in other)}? the catalog has that version, not this one"
    near = closest(name, kind)
    if near:
        return "closest: " + ", ".join(repr(x) for x in near)
    return f"`planner catalog --{SHEET_OF[kind].lower()}` lists the entries"


def catalog_raw(model: dict) -> dict:
    """The catalog entry of a Models record as shipped (its ``catalog`` cell, else its name), or
    {} when the catalog has none: what the roofline reads beyond the Models columns."""
    entry = find(model.get("catalog") or model.get("model"), MODEL)
    return entry.raw if entry is not None else {}
