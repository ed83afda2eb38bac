#!/usr/bin/env bash
# Installs what peerpath needs to build and test on Debian 12: the tool
# chain for ISA-L's bundled source (nasm, autotools), and the reference
# tools the interoperability tests compare against (gzip, pigz, bgzip), and
# cmake, which aws-lc-sys (the AES-GCM library) uses where its cc build does not apply;
# seqkit, the peer `peerpath scan` is compared with.
set -euo pipefail
need_apt=()
for pkg_bin in nasm:nasm autoconf:autoconf automake:automake libtool:libtoolize pigz:pigz tabix:bgzip gzip:gzip make:make gcc:gcc cmake:cmake seqkit:seqkit; do
  pkg=${pkg_bin%%:*}; bin=${pkg_bin##*:}
  command -v "$bin" >/dev/null 2>&1 || need_apt+=("$pkg")
done
# The independent reader of encrypted files the tests use (scripts/ppenc-reference.py).
python3 -c 'import cryptography' >/dev/null 2>&1 || need_apt+=(python3-cryptography)
# Real clients of `peerpath serve` in the tests: curl (HTTP), pymemcache (Debian's python3)
# and libmemcached's memccat (memcached's text protocol).
/usr/bin/python3 -c 'import pymemcache' >/dev/null 2>&1 || need_apt+=(python3-pymemcache)
command -v memccat >/dev/null 2>&1 || command -v memcat >/dev/null 2>&1 || need_apt+=(libmemcached-tools)
command -v curl >/dev/null 2>&1 || need_apt+=(curl)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "peerpath: installing with apt-get: ${need_apt[*]}" >&2
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi
if ! command -v cargo >/dev/null 2>&1; then
  if [ -x "$HOME/.cargo/bin/cargo" ]; then
    export PATH="$HOME/.cargo/bin:$PATH"
  else
    echo "peerpath: installing Rust with rustup (stable)" >&2
    curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal >/dev/null
    export PATH="$HOME/.cargo/bin:$PATH"
  fi
fi
