"""Traffic: prefix-reuse traces (Mooncake, Qwen Bailian) to LRU hit ratios at every cache capacity, and a reuse model for when there is no trace."""
