#!/usr/bin/env bash
# scripts/gpu-kernels.sh - compiles peerpath's GPU kernels (crates/peerpath-gpu/kernels/coding.cu,
# crypt.cu, dedup.cu and scan.cu) to PTX (a .ptx beside each), which the binary carries
# (include_str!) and the CUDA driver compiles for the GPU it finds at run time (any GPU of compute
# capability 7.5 on).
#
# Usage (repository root): scripts/gpu-kernels.sh [--check]
#   --check   compile and compare with the committed .ptx files instead of writing them
#
# Needs no GPU and no CUDA installation: NVRTC (NVIDIA's run-time compiler library) comes from
# PyPI's nvidia-cuda-nvrtc wheel (pip download, pinned below; cached in target/nvrtc), called from
# Python with ctypes. Run it after every change to a .cu file and commit both: the peerpath-gpu
# tests `the_ptx_is_compiled_from_this_source` fail while a .ptx's first line names another source.
# The NVRTC version is CUDA 13.0's: its PTX (ISA 9.0) loads on drivers of CUDA 13.0 and later
# (580 and later, what nvCOMP 6's CUDA 13 build needs too).
set -euo pipefail
cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.."
version=13.0.88
wheel=nvidia_cuda_nvrtc-$version-py3-none-manylinux2010_x86_64.manylinux_2_12_x86_64.whl
wheel_sha256=ad9b6d2ead2435f11cbb6868809d2adeeee302e9bb94bcf0539c7a40d80e8575
check=0
case ${1:-} in
    --check) check=1 ;;
    -h | --help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
    "") ;;
    *) echo "gpu-kernels: unknown option $1 (see --help)" >&2; exit 2 ;;
esac
cache=target/nvrtc
mkdir -p "$cache"
if [ ! -f "$cache/$wheel" ] || ! echo "$wheel_sha256  $cache/$wheel" | sha256sum -c --quiet 2>/dev/null; then
    echo "gpu-kernels: downloading NVRTC $version from PyPI" >&2
    python3 -m pip download -q --no-deps --only-binary=:all: --platform manylinux2014_x86_64 \
        --python-version 3.11 -d "$cache" "nvidia-cuda-nvrtc==$version"
    echo "$wheel_sha256  $cache/$wheel" | sha256sum -c --quiet
fi
lib=$cache/$version
if [ ! -f "$lib/nvidia/cu13/lib/libnvrtc.so.13" ]; then
    rm -rf "$lib.tmp" && mkdir -p "$lib.tmp" && python3 -m zipfile -e "$cache/$wheel" "$lib.tmp" && rm -rf "$lib" && mv "$lib.tmp" "$lib"
fi
status=0
for name in coding crypt dedup scan; do
src=crates/peerpath-gpu/kernels/$name.cu
out=crates/peerpath-gpu/kernels/$name.ptx
tmp=$(mktemp)
trap 'rm -f -- "$tmp"' EXIT
LD_LIBRARY_PATH="$lib/nvidia/cu13/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" python3 - "$src" "$tmp" "$version" <<'PY'
import ctypes, hashlib, os, sys
src_path, out_path, version = sys.argv[1:4]
name = os.path.basename(src_path)
nvrtc = ctypes.CDLL("libnvrtc.so.13")
source = open(src_path, "rb").read()
def ok(status, what, prog=None):
    if status == 0:
        return
    log = b""
    if prog is not None:
        n = ctypes.c_size_t()
        nvrtc.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
        buf = ctypes.create_string_buffer(n.value)
        nvrtc.nvrtcGetProgramLog(prog, buf)
        log = buf.value
    nvrtc.nvrtcGetErrorString.restype = ctypes.c_char_p
    sys.exit(f"gpu-kernels: {what}: {nvrtc.nvrtcGetErrorString(status).decode()}\n{log.decode(errors='replace')}")
prog = ctypes.c_void_p()
ok(nvrtc.nvrtcCreateProgram(ctypes.byref(prog), source, name.encode(), 0, None, None), "nvrtcCreateProgram")
opts = [b"--gpu-architecture=compute_75", b"--std=c++17", b"-default-device"]
arr = (ctypes.c_char_p * len(opts))(*opts)
ok(nvrtc.nvrtcCompileProgram(prog, len(opts), arr), f"compiling {name}", prog)
n = ctypes.c_size_t()
ok(nvrtc.nvrtcGetPTXSize(prog, ctypes.byref(n)), "nvrtcGetPTXSize")
buf = ctypes.create_string_buffer(n.value)
ok(nvrtc.nvrtcGetPTX(prog, buf), "nvrtcGetPTX")
digest = hashlib.sha256(source).hexdigest()
with open(out_path, "wb") as f:
    f.write(f"// peerpath: scripts/gpu-kernels.sh compiled kernels/{name} (sha256 {digest}) with NVRTC {version} for compute_75\n".encode())
    f.write(buf.value)
PY
if [ "$check" = 1 ]; then
    if cmp -s "$tmp" "$out"; then echo "gpu-kernels: $out is current"; else echo "gpu-kernels: $out is not what $src compiles to: run scripts/gpu-kernels.sh" >&2; status=1; fi
    rm -f -- "$tmp"
else
    mv "$tmp" "$out"
    echo "gpu-kernels: wrote $out ($(wc -c < "$out") bytes)"
fi
trap - EXIT
done
exit $status
