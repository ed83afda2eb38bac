#!/usr/bin/env bash
# Installs what peerpath needs to build and test on Debian 12 (a minimal one included):
# the C tool chain and headers (gcc only Recommends libc6-dev), the tool chain for
# ISA-L's bundled source (nasm, autotools), cmake and pkg-config for aws-lc-sys (the
# AES-GCM library), the reference tools the interoperability tests compare against
# (gzip, pigz, bgzip, seqkit; groff, zsh and fish for the man pages and completions), and Rust itself (rustup, stable) where cargo is missing
# or older than the workspace's rust-version. Does nothing where all of it is there.
# Sourced by scripts/demo.sh and scripts/test.sh: it exports PATH when it finds or
# installs Rust in ~/.cargo/bin.
set -euo pipefail
pp_die() { echo "peerpath: $*" >&2; exit 1; }
need_apt=()
for pkg_bin in nasm:nasm autoconf:autoconf automake:automake libtool:libtoolize pigz:pigz tabix:bgzip \
    gzip:gzip make:make gcc:gcc gcc:cc cmake:cmake pkg-config:pkg-config seqkit:seqkit curl:curl; do
  pkg=${pkg_bin%%:*}; bin=${pkg_bin##*:}
  command -v "$bin" >/dev/null 2>&1 || need_apt+=("$pkg")
done
# What --no-install-recommends leaves out on a minimal Debian: the C library's headers
# (every C build here and Rust's linking), and the CA certificates curl's TLS checks against.
[ -e /usr/include/stdio.h ] || need_apt+=(libc6-dev)
[ -e /etc/ssl/certs/ca-certificates.crt ] || need_apt+=(ca-certificates)
# The independent reader of encrypted files the tests use (scripts/ppenc-reference.py).
python3 -c 'import cryptography' >/dev/null 2>&1 || need_apt+=(python3-cryptography)
# Real clients of `peerpath serve` in the tests: curl (HTTP), pymemcache (Debian's python3)
# and libmemcached's memccat (memcached's text protocol).
/usr/bin/python3 -c 'import pymemcache' >/dev/null 2>&1 || need_apt+=(python3-pymemcache)
command -v memccat >/dev/null 2>&1 || command -v memcat >/dev/null 2>&1 || need_apt+=(libmemcached-tools)
# What reads the man pages and completion scripts peerpath makes, in the tests: groff, and the
# shells whose scripts are checked (bash is there; zsh, fish).
for pkg_bin in groff-base:groff zsh:zsh fish:fish; do
  command -v "${pkg_bin##*:}" >/dev/null 2>&1 || need_apt+=("${pkg_bin%%:*}")
done
if [ ${#need_apt[@]} -gt 0 ]; then
  mapfile -t need_apt < <(printf '%s\n' "${need_apt[@]}" | sort -u)
  echo "peerpath: installing with apt-get: ${need_apt[*]}" >&2
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi

# Rust: the workspace's rust-version is the oldest cargo that builds it.
rust_min=$(sed -n 's/^rust-version *= *"\([0-9.]*\)".*/\1/p' "$(dirname "${BASH_SOURCE[0]}")/../Cargo.toml" | head -n 1)
[ -n "$rust_min" ] || pp_die "no rust-version in the workspace's Cargo.toml"
# The version of the cargo that runs here ("" if none runs).
pp_cargo_version() { { cargo --version 2>/dev/null || true; } | sed -n 's/^cargo \([0-9][0-9.]*\).*/\1/p'; }
# Whether the cargo that runs here is at least rust_min.
pp_cargo_ok() {
  local have; have=$(pp_cargo_version)
  [ -n "$have" ] && [ "$(printf '%s\n%s\n' "$rust_min" "$have" | sort -V | head -n 1)" = "$rust_min" ]
}
if ! pp_cargo_ok && [ -x "$HOME/.cargo/bin/cargo" ]; then
  # rustup's Rust, installed before but not on this shell's PATH (or behind Debian's cargo).
  export PATH="$HOME/.cargo/bin:$PATH"
fi
# Why Rust is installed, when it is: a cargo that runs but is too old.
pp_cargo_why() {
  local have; have=$(pp_cargo_version)
  [ -z "$have" ] || echo "cargo $have is older than the workspace's rust-version $rust_min; "
}
if ! pp_cargo_ok && command -v rustup >/dev/null 2>&1; then
  # rustup's default toolchain is older (a pinned one) or none: build with its stable one
  # (asking for a stable that is not installed would install it without a word).
  if ! rustup toolchain list | grep '^stable-' >/dev/null || ! RUSTUP_TOOLCHAIN=stable pp_cargo_ok; then
    echo "peerpath: $(pp_cargo_why)installing the stable toolchain with rustup" >&2
    rustup -q toolchain install stable --profile minimal >/dev/null
  fi
  export RUSTUP_TOOLCHAIN=stable
elif ! pp_cargo_ok; then
  echo "peerpath: $(pp_cargo_why)installing Rust (stable) with rustup" >&2
  # In a subshell: its EXIT trap and exits are its own (this file is sourced by the scripts).
  (
    rustup_url="https://static.rust-lang.org/rustup/dist/$(uname -m)-unknown-linux-gnu/rustup-init"
    rustup_dir=$(mktemp -d)
    trap 'rm -rf "$rustup_dir"' EXIT
    curl --proto '=https' --tlsv1.2 -sSf -o "$rustup_dir/rustup-init" "$rustup_url" \
      || pp_die "cannot download $rustup_url"
    curl --proto '=https' --tlsv1.2 -sSf -o "$rustup_dir/rustup-init.sha256" "$rustup_url.sha256" \
      || pp_die "cannot download $rustup_url.sha256"
    rustup_want=$(cut -d ' ' -f 1 "$rustup_dir/rustup-init.sha256")
    rustup_got=$(sha256sum "$rustup_dir/rustup-init" | cut -d ' ' -f 1)
    [ "$rustup_want" = "$rustup_got" ] \
      || pp_die "$rustup_url: sha256 $rustup_got does not match the published $rustup_want; not running it"
    chmod +x "$rustup_dir/rustup-init"
    # -y also accepts a Debian cargo left in /usr/bin; ~/.cargo/bin goes before it on PATH.
    RUSTUP_INIT_SKIP_PATH_CHECK=yes "$rustup_dir/rustup-init" -y -q --profile minimal \
      --default-toolchain stable >/dev/null
  ) || exit 1
  export PATH="$HOME/.cargo/bin:$PATH"
  pp_cargo_ok || pp_die "rustup installed cargo $(pp_cargo_version), older than the workspace's rust-version $rust_min"
fi
