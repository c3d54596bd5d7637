"""KV-hit capacity planner: KV-cache hit ratios to TTFT, TPM, GPUs and cost, as a live Excel model."""

__version__ = "0.1.0"
