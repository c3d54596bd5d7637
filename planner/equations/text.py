"""The model's equations as text, written once: README.md ("The model in short"), docs/model.md
and the memo's assumptions take them from here (``python docs/make_equations.py`` rewrites the
two documents' marked blocks; tests/test_equation_text.py holds the three together)."""

from __future__ import annotations

INSTANCES = "instances_needed = ceil(demand_tpm / (tpm_delivered_target · target_utilization))"

#: the calibration's fit of the measured TTFTs (planner.plan.calibrate; the Calibration sheet's description)
CALIBRATION_FIT = ("TTFT = t_fixed + c_hit*(h>0) + k_attn*N^2*(1-h^2) + k_ffn*N*(1-h) + load - "
                   "alpha*MIN(load, compute), load = h*N*S/B_eff")

#: the bullets of "The model in short", in order (Markdown)
MODEL_IN_SHORT: tuple[str, ...] = (
    "`S = 2 · L · ceil(kv_heads / tp) · d_head · b_elem` (GQA/MHA/MQA; heads replicate when "
    "`tp > kv_heads`); `S = L · mla_kv_dim · b_elem` for MLA (no division by tp).",
    "`T_load(h) = h · N · S / B` (per GPU shard).",
    "`T_compute(h) = T_attn0 · (1 - h²) + T_ffn0 · (1 - h) + T_other0 · f(h)`, with "
    "`f` = 1, `1 - h` or `1 - h²` (`other_scaling` const / linear / quadratic). Attention "
    "falls as `1 - h²` because suffix tokens still attend to the cached prefix.",
    "`TTFT(h, α) = T_fixed + T_load + T_compute - α · min(T_load, T_compute)`.",
    "`T0 = TTFT(0)`, `δ = N · S / (B · T0)`, break-even `h* = 1 / (1 + δ)`, first-order "
    "capacity multiplier `1 / max(1 - h, δ h)`.",
    "Chip time `C(h) = TTFT(h, α) + t_decode`; delivered TPM `(isl + osl) · 60000 / C`; "
    "physical TPM `(isl · (1 - h) + osl) · 60000 / C`.",
    "Re-hit: `TPM(target) = TPM(measured) · C(h_measured) / C(h_target)`.",
    f"`{INSTANCES}`, `gpus_needed = instances_needed · tp`, "
    "`cost per Mtok = price · tp · 10^6 / (TPM · 60)`.",
)

#: the memo's "The model in brief", (label, equation) in order (planner.memo.render)
BRIEF: tuple[tuple[str, str], ...] = (
    ("KV bytes per token per GPU", "S = 2·L·⌈kv_heads/tp⌉·d_head·b (GQA);  S = L·mla_kv_dim·b (MLA)"),
    ("KV load", "T_load(h) = h·N·S / B_pcie"),
    ("Compute after a hit", "T_compute(h) = T_attn0·(1−h²) + T_ffn0·(1−h) + T_other0·f(h)"),
    ("TTFT", "TTFT(h, α) = T_fixed + T_load + T_compute − α·min(T_load, T_compute)"),
    ("Break-even hit", "δ = N·S / (B_pcie·T0),  h* = 1 / (1 + δ)"),
    ("Chip time and TPM", "C(h) = TTFT(h, α) + T_decode;  delivered = (isl + osl)·60000 / C;  "
                          "physical = (isl·(1−h) + osl)·60000 / C"),
    ("GPUs", "instances = ⌈demand / (TPM · target_utilization)⌉,  GPUs = instances · tp"),
)

BEGIN, END = "<!-- equations: begin (generated from planner/equations/text.py) -->", "<!-- equations: end -->"


def markdown() -> str:
    """The marked block of README.md and docs/model.md."""
    return "\n".join([BEGIN, *(f"- {b}" for b in MODEL_IN_SHORT), END])


def replace_block(text: str) -> str:
    """``text`` with its marked block replaced by :func:`markdown` (ValueError without markers)."""
    i, j = text.index(BEGIN), text.index(END) + len(END)
    return text[:i] + markdown() + text[j:]
