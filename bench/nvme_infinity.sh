#!/bin/sh
# ZeRO-Infinity demo (not a test): measures the disk's sequential bandwidth with dd,
# then trains bench/nvme_infinity on 2 ranks inside a memory cgroup whose limit is
# well below the model states, with the states in swap files under DIR.
#
#     bench/nvme_infinity.sh DIR LIMIT_GB [bench/nvme_infinity options]
#
# The limit: a cgroup v2 directory (memory.max) or, where only v1 is mounted, a v1
# memory cgroup (memory.limit_in_bytes, swap included when memsw is there) created
# under /sys/fs/cgroup and removed at the end; systemd-run needs systemd as PID 1.
# Run from the build directory. Deletes its files (the engine removes its swap files).
set -eu
[ $# -ge 2 ] || { echo "usage: $0 DIR LIMIT_GB [options]" >&2; exit 2; }
dir=$1 limit_gb=$2
shift 2
mkdir -p "$dir"
df -h "$dir"
free -g
bytes=$((limit_gb * 1024 * 1024 * 1024))

# the disk: 4 GiB (DD_MIB) written and read back with O_DIRECT, 1 MiB blocks
test_file="$dir/dd-bandwidth.test"
w=$(dd if=/dev/zero of="$test_file" bs=1M count="${DD_MIB:-4096}" oflag=direct conv=fsync 2>&1 | tail -1)
r=$(dd if="$test_file" of=/dev/null bs=1M iflag=direct 2>&1 | tail -1)
rm -f "$test_file"
echo "dd write: $w"
echo "dd read:  $r"
# "4294967296 bytes (4.3 GB, 4.0 GiB) copied, 3.1 s, 1.4 GB/s": bytes / seconds
gbps() { echo "$1" | awk '{for (i = 1; i <= NF; i++) if ($i ~ /^s,?$/ || $i == "s,") s = $(i-1); printf "%.3f", $1 / s / 1e9}'; }
wbw=$(gbps "$w") rbw=$(gbps "$r")
echo "disk: write $wbw GB/s, read $rbw GB/s"

cg=""
if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
    cg=/sys/fs/cgroup/libzero-nvme-$$
    mkdir "$cg"
    echo "$bytes" >"$cg/memory.max"
    echo 0 >"$cg/memory.swap.max" 2>/dev/null || true
    echo "memory limit: cgroup v2 $cg, memory.max = $limit_gb GiB"
elif [ -d /sys/fs/cgroup/memory ]; then
    cg=/sys/fs/cgroup/memory/libzero-nvme-$$
    mkdir "$cg"
    echo "$bytes" >"$cg/memory.limit_in_bytes"
    echo "$bytes" >"$cg/memory.memsw.limit_in_bytes" 2>/dev/null || true
    echo "memory limit: cgroup v1 $cg, memory.limit_in_bytes = $limit_gb GiB"
else
    echo "no cgroup memory controller here: running without a limit" >&2
fi
status=0
# a shell that moves itself into the cgroup, then becomes mpirun (the ranks inherit it)
sh -c '[ -z "$1" ] || echo $$ >"$1/cgroup.procs"; shift; exec "$@"' sh "$cg" \
    mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 bench/nvme_infinity \
    --path "$dir" --read-gbps "$rbw" --write-gbps "$wbw" "$@" || status=$?
if [ -n "$cg" ]; then
    peak=$(cat "$cg/memory.peak" 2>/dev/null || cat "$cg/memory.max_usage_in_bytes" 2>/dev/null || echo 0)
    echo "peak memory of the run (cgroup): $(awk -v b="$peak" 'BEGIN {printf "%.2f", b / 2^30}') GiB of $limit_gb GiB"
    rmdir "$cg" 2>/dev/null || true
fi
exit $status
