#!/bin/sh
# A longer fuzz run than CI's (40 examples): tests/fuzz_long.sh [EXAMPLES]
cd "$(dirname "$0")/.." && PLANNER_FUZZ_EXAMPLES="${1:-2000}" exec python3 -m pytest tests/test_fuzz.py -q \
    --hypothesis-show-statistics -p no:cacheprovider
