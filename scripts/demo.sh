#!/usr/bin/env bash
# One command on a fresh Debian 12 machine: install what is needed, build,
# and run the main job on its embedded default (bundled sample data).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/install-deps.sh
cargo build --release --locked -p peerpath-cli
exec target/release/peerpath demo "$@"
