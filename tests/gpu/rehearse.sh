#!/bin/sh
# rehearse.sh -- run the GPU bundle's tests/gpu/run.sh, in dry-run mode, inside a root
# that holds what the lent GPU machine's image holds and nothing of ours: no ssh or
# rsh, no Open MPI, no OpenBLAS, no jansson, no Check, no compiler (that image is
# this workplace's 'cuda' image: CUDA, PyTorch and a python3, see
# /work/.library/device/KINDS.md; the GPU itself cannot be rehearsed here).
#
#   sh tests/gpu/make_bundle.sh && sh tests/gpu/rehearse.sh     (as root, repository root)
#   make gpu-rehearsal                                           (both, from a build dir)
#
# The root is Debian 12 minbase plus python3-minimal, made once by debootstrap from
# Debian's mirror and kept under /var/tmp (ZERO_REHEARSAL_CACHE), so a rerun takes
# seconds. Each run copies tests/gpu/run.sh and .gpu-bundle/ into a fresh copy of it,
# mounts /proc, /dev and a /dev/shm (Open MPI's shared-memory transport needs it),
# runs run.sh with ZERO_GPU_DRY_RUN=1 under an empty environment, prints its summary
# and exits with its status. The device image has CUDA's runtime libraries, and NCCL
# perhaps only in PyTorch's wheel: the root gets this machine's libcudart, libcublas and
# libcublasLt in /usr/local/cuda/lib64 and libnccl.so.2 in a python site-packages
# folder nvidia/nccl/lib (as the nvidia-nccl wheel lays it out), hard-linked when they
# share a file system with the cache, so run.sh's search for them is rehearsed too;
# the driver (libcuda, nvidia-smi) is not there, so the CUDA programs skip (77). Needs root (chroot, mount) and debootstrap (apt-get
# install debootstrap). Not run by make check or CI: it takes minutes the first time.
# ZERO_REHEARSAL_RUN_SH=FILE rehearses another run.sh (an old one, to see it fail).
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
cache=${ZERO_REHEARSAL_CACHE:-/var/tmp/libzero-rehearsal}
suite=bookworm
mirror=${ZERO_REHEARSAL_MIRROR:-http://deb.debian.org/debian}
base=$cache/$suite
cuda_lib=${ZERO_REHEARSAL_CUDA_LIB:-/usr/local/cuda/lib64}
stamp_text="debootstrap --variant=minbase --include=python3-minimal $suite"

die() {
    echo "rehearse.sh: $*" >&2
    exit 1
}

[ "$(id -u)" -eq 0 ] || die "needs root (debootstrap, chroot and mount)"
[ -d "$root/.gpu-bundle/bin" ] || die "no .gpu-bundle/bin: run tests/gpu/make_bundle.sh first"

# ---- one rehearsal at a time: they share the cache's base root and run root (two at
# once unmounted each other's /dev/shm)
mkdir -p "$cache"
exec 9>"$cache/lock"
if ! flock -n 9; then
    echo "rehearse.sh: another rehearsal holds $cache/lock; waiting for it"
    flock 9
fi

# ---- the base root, once
if [ "$(cat "$base/etc/libzero-rehearsal" 2>/dev/null)" != "$stamp_text" ]; then
    command -v debootstrap >/dev/null || die "debootstrap not found: apt-get install -y debootstrap"
    echo "rehearse.sh: building the base root $base (once; a few minutes)"
    rm -rf "$base.partial"
    mkdir -p "$cache"
    # shellcheck disable=SC2086 # $stamp_text: the command's words
    ${stamp_text%% *} ${stamp_text#* } "$base.partial" "$mirror" >"$cache/debootstrap.log" 2>&1 ||
        die "debootstrap failed: see $cache/debootstrap.log"
    echo "$stamp_text" >"$base.partial/etc/libzero-rehearsal"
    rm -rf "$base"
    mv "$base.partial" "$base"
fi

# ---- a fresh copy for this run, and what travels to the device: run.sh and the bundle
run_root=$cache/run
for m in dev/shm dev proc sys; do # a previous run killed before its cleanup
    mountpoint -q "$run_root/$m" 2>/dev/null && umount "$run_root/$m"
done
rm -rf "$run_root"
cp -a "$base" "$run_root"
# shellcheck disable=SC2317 # reached through the trap
cleanup() {
    for m in dev/shm dev proc sys; do
        mountpoint -q "$run_root/$m" && umount "$run_root/$m"
    done
    return 0
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# the device image has none of these: a root that has one would rehearse nothing
for bad in ssh rsh mpirun orterun mpicc gcc cc nvidia-smi; do
    if chroot "$run_root" /bin/sh -c "command -v $bad" >/dev/null 2>&1; then
        die "the rehearsal root has $bad, which the device image lacks"
    fi
done
for bad in libopenblas libjansson libcheck libmpi; do
    if find "$run_root/usr/lib" "$run_root/lib" -name "$bad*" 2>/dev/null | grep -q .; then
        die "the rehearsal root has $bad, which the device image lacks"
    fi
done

# CUDA's runtime libraries where the device image has them (see the top)
place() { # place FILE DIR: a hard link, else a copy
    mkdir -p "$2"
    real=$(readlink -f "$1")
    ln "$real" "$2/$(basename "$1")" 2>/dev/null || cp "$real" "$2/$(basename "$1")"
}
site=$(chroot "$run_root" python3 -c 'import site; print(site.getsitepackages()[0])')
for lib in libcudart.so.13 libcublas.so.13 libcublasLt.so.13 libnccl.so.2; do
    f=$(find -L "$cuda_lib" "$cuda_lib/../lib" /usr/local/lib -maxdepth 1 -name "$lib" 2>/dev/null |
        head -n 1)
    [ -n "$f" ] || die "$lib not found in $cuda_lib (set ZERO_REHEARSAL_CUDA_LIB)"
    case $lib in
        libnccl*) place "$f" "$run_root$site/nvidia/nccl/lib" ;;
        *) place "$f" "$run_root/usr/local/cuda/lib64" ;;
    esac
done

repo=$run_root/repo
mkdir -p "$repo/tests/gpu"
cp "${ZERO_REHEARSAL_RUN_SH:-$root/tests/gpu/run.sh}" "$repo/tests/gpu/run.sh"
cp -a "$root/.gpu-bundle" "$repo/"
mkdir -p "$run_root/out"

mount -t proc proc "$run_root/proc"
mount -t sysfs sysfs "$run_root/sys"
mount --bind /dev "$run_root/dev"
mount -t tmpfs -o size=256m tmpfs "$run_root/dev/shm"

echo "rehearse.sh: running tests/gpu/run.sh (ZERO_GPU_DRY_RUN=1) in $run_root"
set +e
chroot "$run_root" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    HOME=/root LANG=C.UTF-8 ZERO_GPU_DRY_RUN=1 OUT=/out ZERO_GPU_BUDGET_S="${ZERO_GPU_BUDGET_S:-470}" \
    /bin/sh /repo/tests/gpu/run.sh >"$cache/run.log" 2>&1
rc=$?
set -e
echo "---- summary ($run_root/out has summary.txt, logs.txt and env.txt)"
cat "$run_root/out/summary.txt" 2>/dev/null || cat "$cache/run.log"
if [ $rc -eq 0 ]; then
    echo "rehearse.sh: PASS: run.sh exits 0 in a root with only what the device image has"
else
    echo "rehearse.sh: FAIL: run.sh exited $rc ($run_root/out/logs.txt has every step)"
fi
exit $rc
