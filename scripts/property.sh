#!/usr/bin/env bash
# The property tests, longer than CI runs them and from a new seed each run (CI's are fixed):
# the main job's, CASES cases (default 400), each under a watchdog; then the workspace's tests,
# every proptest with PROPTEST_CASES=CASES (it overrides a count a test fixes). Prints the seed
# so a failure can be replayed; a failing proptest also saves its case under proptest-regressions/
# (commit it: CI reruns saved cases first).
#   scripts/property.sh [CASES] [SEED]
set -euo pipefail
cd "$(dirname "$0")/.."
cases=${1:-400} seed=${2:-$(date +%s)}
echo "property test: $cases cases, seed $seed (replay: scripts/property.sh $cases $seed)" >&2
PEERPATH_PROPERTY_CASES=$cases PEERPATH_PROPERTY_SEED=$seed \
    cargo test --release --locked -p peerpath-cli --test adversarial -- the_main_job_round_trips --nocapture
PROPTEST_CASES=$cases PROPTEST_RNG_SEED=$seed \
    cargo test --release --locked --workspace -- --skip the_main_job_round_trips
