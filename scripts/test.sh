#!/usr/bin/env bash
# The project's test command: installs what the tests need, then runs every
# test of the workspace (unit, integration, interoperability, bad input).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/install-deps.sh
# Property tests draw their cases from a fixed seed here, so a run is the same on every
# machine and a failure replays; scripts/property.sh draws new ones (a seed per run).
export PROPTEST_RNG_SEED=${PROPTEST_RNG_SEED:-20261203}
cargo test --workspace --locked "$@"
