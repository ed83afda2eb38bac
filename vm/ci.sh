#!/usr/bin/env bash
# CI entry for the VM tests (vm/test.sh), within a time budget.
#
#   PEERPATH_CI_BUDGET_S=SECONDS vm/ci.sh
#
# - kernel cached (vm/build-kernel.sh --print-path): run the VM tests if the
#   budget covers them (PEERPATH_CI_VM_TEST_S, default 900 s: the static
#   peerpath build, the initramfs and two boots);
# - kernel not cached: build it first if the budget also covers the build
#   (PEERPATH_CI_KERNEL_BUILD_S, default 1500 s; it took about 10 minutes on
#   2 cores while other builds ran);
# - otherwise, or on a machine that cannot run them (no apt, no /usr/src
#   space, not x86_64): print why and exit 0.
# PEERPATH_CI_BUDGET_S unset means no limit. PEERPATH_CI_SKIP_VM=1 skips.
# A failing VM test fails CI (exit status of vm/test.sh).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
skip() { echo "vm/ci.sh: VM tests skipped: $*"; exit 0; }

[ "${PEERPATH_CI_SKIP_VM:-0}" = 1 ] && skip "PEERPATH_CI_SKIP_VM=1"
[ "$(uname -m)" = x86_64 ] || skip "not an x86_64 host ($(uname -m))"
budget=${PEERPATH_CI_BUDGET_S:-}
need_test=${PEERPATH_CI_VM_TEST_S:-900}
need_kernel=${PEERPATH_CI_KERNEL_BUILD_S:-1500}

if kernel=$("$here/build-kernel.sh" --print-path 2>/dev/null); then
    if [ -n "$budget" ] && [ "$budget" -lt "$need_test" ]; then
        skip "the kernel is cached ($kernel) but the CI budget left (${budget} s) is below the ${need_test} s the VM tests need"
    fi
    echo "vm/ci.sh: cached kernel $kernel; running the VM tests (budget ${budget:-unlimited} s)"
else
    if [ -n "$budget" ] && [ "$budget" -lt $((need_kernel + need_test)) ]; then
        skip "no cached kernel, and the CI budget left (${budget} s) is below the $((need_kernel + need_test)) s a kernel build (${need_kernel} s) plus the VM tests (${need_test} s) need; run vm/build-kernel.sh once on this machine (cache: ${PEERPATH_VM_CACHE:-$HOME/.cache/peerpath/vm})"
    fi
    if ! "$here/build-kernel.sh" --deps-only > /dev/null 2>&1; then
        skip "cannot install the VM's packages (apt-get failed: linux-source-6.12, qemu-system-x86, busybox-static, build tools)"
    fi
    echo "vm/ci.sh: no cached kernel; building it (budget ${budget:-unlimited} s), then the VM tests"
fi
"$here/build-kernel.sh" --deps-only > /dev/null 2>&1 || skip "cannot install the VM's packages (apt-get failed)"
exec "$here/test.sh"
