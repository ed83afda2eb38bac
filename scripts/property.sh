#!/usr/bin/env bash
# The main job's property test, longer than CI runs it: CASES cases (default 400) from SEED
# (default: the time), each under a watchdog; prints the seed so a failure can be replayed.
#   scripts/property.sh [CASES] [SEED]
set -euo pipefail
cd "$(dirname "$0")/.."
cases=${1:-400} seed=${2:-$(date +%s)}
echo "property test: $cases cases, seed $seed (replay: scripts/property.sh $cases $seed)" >&2
PEERPATH_PROPERTY_CASES=$cases PEERPATH_PROPERTY_SEED=$seed \
    cargo test --release --locked -p peerpath-cli --test adversarial -- the_main_job_round_trips --nocapture
