#!/usr/bin/env bash
# The project's test command: installs what the tests need, then runs every
# test of the workspace (unit, integration, interoperability, bad input).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/install-deps.sh
cargo test --workspace --locked "$@"
