#!/bin/sh
# tests/aarch64/run.sh -- the exactness contract on a second architecture.
#
#     tests/aarch64/run.sh [NATIVE_BUILD_DIR]        (make check-aarch64 passes it)
#
# Cross-builds libzero for aarch64 with Debian's gcc-aarch64-linux-gnu against arm64
# libraries (Open MPI, OpenBLAS, jansson, Check) extracted from their .debs into
# NATIVE_BUILD_DIR/aarch64/sysroot -- extracted, not installed: libopenmpi-dev:arm64 is
# not co-installable with the amd64 one. Then runs the same programs on this machine
# and on aarch64 under qemu-aarch64 -L /usr/aarch64-linux-gnu, each as an Open MPI
# singleton (N = 1, no mpirun: OMPI_MCA_ess_singleton_isolated=1; N = 1 equals every
# N by the contract), and compares what they print, at run time:
#   1. tests/aarch64/exactness: src/base/exact_math.h's outputs over a sample (no GEMM);
#   2. train_mlp and 3. train_gpt --steps 0 --save-weights: the initial weights of the
#      MLP and of a tiny GPT (no GEMM in them), the files cmp'd;
#   4. zero verify --steps 3: the MLP trained through the cpu kernels, stages 0-3;
#   5. train_gpt --steps 3 --save-weights: the tiny GPT trained, the files cmp'd;
#   6. train_gpt again with ZERO_CPU_ISA=scalar on both, and in bf16 under the bf16-tile
#      contract (libzero.matmul "bf16_tile": AMX's arithmetic, emulated on aarch64);
#   7. tests/test_gemm under qemu: every aarch64 variant equals the naive fmaf chain;
#   8. ZERO_CPU_ISA=scalar and neon accepted on aarch64, avx2 and avx512 refused.
# 4 to 6 go through the cpu backend's GEMM in exact mode: libzero's own, which fixes
# the order of every sum (aarch64 picks its NEON micro-kernel, x86-64 AVX2 or AVX-512
# by cpuid: the same bits by cpu_gemm.h's contract), never OpenBLAS.
# Exit 0: all equal; 1: a difference (printed); 77: the tools cannot be had here.
set -u

top=$(cd "$(dirname "$0")/../.." && pwd)
native=$(cd "${1:-$top/build}" && pwd) || exit 1
work=$native/aarch64
sysroot=$work/sysroot
lib=$sysroot/usr/lib/aarch64-linux-gnu
say() { echo "tests/aarch64/run.sh: $*"; }
skip() {
    say "SKIP: $*" >&2
    exit 77
}
as_root() { [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; }

# ---------------------------------------------------------------- tools
pkgs=
command -v aarch64-linux-gnu-gcc >/dev/null 2>&1 || pkgs="$pkgs gcc-aarch64-linux-gnu"
command -v qemu-aarch64 >/dev/null 2>&1 || pkgs="$pkgs qemu-user"
if [ -n "$pkgs" ]; then
    as_root || skip "needs$pkgs (apt-get install -y$pkgs, as root)"
    apt-get install -y $pkgs || { apt-get update && apt-get install -y $pkgs; } ||
        skip "apt-get install$pkgs failed"
fi

# ---------------------------------------------------------------- arm64 libraries
# Runtime closure of libopenmpi3, libopenblas0-pthread, libjansson4, Check, PCRE2 and utf8proc on Debian 12.
debs="libopenmpi-dev libopenmpi3 libpmix2 libevent-core-2.1-7 libevent-pthreads-2.1-7
 libhwloc15 libhwloc-plugins libfabric1 libucx0 libibverbs1 ibverbs-providers librdmacm1
 libnl-3-200 libnl-route-3-200 libnuma1 libmunge2 libpciaccess0 libudev1 libxml2 libicu72
 libx11-6 libxau6 libxcb1 libxdmcp6 libxext6 libxnvctrl0 ocl-icd-libopencl1 libbsd0 libmd0
 libltdl7 libatomic1 libstdc++6 libgomp1 libgfortran5 libzstd1 liblzma5 libbz2-1.0 zlib1g
 libcrypt1 libpcre2-8-0 libopenblas-dev libopenblas-pthread-dev libopenblas0-pthread
 libopenblas0 libjansson4 libjansson-dev check libsubunit0 libsubunit-dev
 libpcre2-dev libpcre2-16-0 libpcre2-32-0 libpcre2-posix3 libutf8proc-dev libutf8proc2"
if [ ! -f "$sysroot/.complete" ]; then
    as_root || skip "needs the arm64 .debs: run as root with apt-get"
    if ! dpkg --print-foreign-architectures | grep -qx arm64; then
        dpkg --add-architecture arm64 || skip "dpkg --add-architecture arm64 failed"
    fi
    if ! apt-cache show libopenmpi3:arm64 >/dev/null 2>&1; then
        apt-get update || skip "apt-get update failed"
    fi
    rm -rf "$work/debs" "$sysroot"
    mkdir -p "$work/debs" "$sysroot"
    (cd "$work/debs" && apt-get download $(for p in $debs; do echo "$p:arm64"; done)) ||
        skip "apt-get download of the arm64 libraries failed"
    for d in "$work/debs"/*.deb; do
        dpkg -x "$d" "$sysroot" || skip "dpkg -x $d failed"
    done
    touch "$sysroot/.complete"
fi

# ---------------------------------------------------------------- cross build
cross=$work/build
if [ ! -f "$cross/config.status" ]; then
    mkdir -p "$cross"
    (cd "$cross" &&
        PKG_CONFIG_LIBDIR="$lib/pkgconfig:$lib/openblas-pthread/pkgconfig" \
            PKG_CONFIG_SYSROOT_DIR="$sysroot" \
            "$top/configure" --host=aarch64-linux-gnu --disable-shared \
            MPICC=aarch64-linux-gnu-gcc \
            LDFLAGS="-Wl,-rpath-link,$lib -Wl,-rpath-link,$sysroot/lib/aarch64-linux-gnu -Wl,-rpath-link,$lib/openblas-pthread" \
            >configure.out 2>&1) || {
        tail -20 "$cross/configure.out"
        rm -f "$cross/config.status"
        # the tools are here: a configure that fails is ours (a test program it
        # runs, which cannot run when cross-compiling, once skipped this whole check)
        say "cross configure failed (log: $cross/configure.out)"
        exit 1
    }
fi
programs="tests/aarch64/exactness tests/test_gemm src/cli/zero examples/train_mlp examples/train_gpt"
make -C "$cross" -j2 $programs >"$cross/make.out" 2>&1 || {
    tail -20 "$cross/make.out"
    say "cross build failed (log: $cross/make.out)"
    exit 1
}
make -C "$native" $programs >/dev/null || exit 1

# ---------------------------------------------------------------- run both
export OMPI_MCA_ess_singleton_isolated=1 OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
run_native() {
    prog=$1
    shift
    "$native/$prog" "$@"
}
run_arm() {
    prog=$1
    shift
    LD_LIBRARY_PATH="$lib:$sysroot/lib/aarch64-linux-gnu:$lib/openmpi/lib:$lib/openblas-pthread" \
        OPAL_PREFIX="$sysroot/usr" \
        OMPI_MCA_mca_base_component_path="$lib/openmpi/lib/openmpi3" \
        qemu-aarch64 -L /usr/aarch64-linux-gnu "$cross/$prog" "$@"
}
out=$work/out
rm -rf "$out"
mkdir -p "$out"
status=0
# compare NAME FILTER CMD...: runs CMD on both, compares the lines FILTER selects
compare() {
    name=$1 filter=$2
    shift 2
    start=$(date +%s)
    run_native "$@" >"$out/$name.x86_64" 2>&1
    run_arm "$@" >"$out/$name.aarch64" 2>&1
    secs=$(($(date +%s) - start))
    grep -E "$filter" "$out/$name.x86_64" >"$out/$name.x86_64.cmp"
    grep -E "$filter" "$out/$name.aarch64" >"$out/$name.aarch64.cmp"
    if [ -s "$out/$name.x86_64.cmp" ] && cmp -s "$out/$name.x86_64.cmp" "$out/$name.aarch64.cmp"; then
        say "$name: equal (${secs}s)"
    else
        say "$name: DIFFERENT (${secs}s); x86-64, then aarch64:"
        cat "$out/$name.x86_64.cmp" "$out/$name.aarch64.cmp"
        [ -s "$out/$name.x86_64.cmp" ] || tail -5 "$out/$name.x86_64" "$out/$name.aarch64"
        status=1
    fi
}
# compare_weights NAME PROG ARGS...: PROG ARGS --save-weights on both, then cmp the files
compare_weights() {
    name=$1 prog=$2
    shift 2
    start=$(date +%s)
    run_native "$prog" "$@" --save-weights "$out/$name.x86_64.safetensors" >"$out/$name.x86_64" 2>&1
    run_arm "$prog" "$@" --save-weights "$out/$name.aarch64.safetensors" >"$out/$name.aarch64" 2>&1
    secs=$(($(date +%s) - start))
    if [ -s "$out/$name.x86_64.safetensors" ] &&
        cmp -s "$out/$name.x86_64.safetensors" "$out/$name.aarch64.safetensors"; then
        say "$name: equal weights (${secs}s)"
    else
        say "$name: DIFFERENT weights (${secs}s); x86-64, then aarch64:"
        for f in "$out/$name.x86_64" "$out/$name.aarch64"; do
            sha256sum "$f.safetensors" 2>/dev/null || echo "no $f.safetensors"
            tail -3 "$f"
        done
        status=1
    fi
}
mlp="--hidden 32 --layers 2 --align 64"
gpt="--n-layer 1 --n-head 2 --n-embd 32 --batch 4 --quiet"
compare math '^exact_math' tests/aarch64/exactness
compare_weights mlp-init examples/train_mlp $mlp --steps 0
compare_weights gpt-init examples/train_gpt $gpt --steps 0
compare mlp-train '^stage' src/cli/zero verify --worlds 1 $mlp --steps 3
compare_weights gpt-train examples/train_gpt $gpt --steps 3
export ZERO_CPU_ISA=scalar
compare_weights gpt-train-scalar examples/train_gpt $gpt --steps 3
unset ZERO_CPU_ISA
# bf16 under the bf16-tile contract: x86-64's AMX (or its emulation) against aarch64's C steps
printf '{"bf16": {"enabled": true}, "libzero": {"matmul": "bf16_tile"}}\n' >"$out/tile.json"
compare_weights gpt-tile examples/train_gpt $gpt --steps 3 --config "$out/tile.json"
# the GEMM's contract on aarch64: each variant it has equals tests/test_gemm.c's naive chain
start=$(date +%s)
if CK_FORK=no run_arm tests/test_gemm >"$out/test_gemm.aarch64" 2>&1; then
    say "test_gemm on aarch64: passed ($(($(date +%s) - start))s): $(grep -E '^[0-9]+%' "$out/test_gemm.aarch64")"
else
    say "test_gemm on aarch64: FAILED:"
    tail -20 "$out/test_gemm.aarch64"
    status=1
fi
# ZERO_CPU_ISA on aarch64: scalar and neon run, the x86-64 variants are refused
for isa in scalar neon avx2 avx512; do
    ZERO_CPU_ISA=$isa run_arm examples/train_mlp $mlp --steps 0 >"$out/isa-$isa.aarch64" 2>&1
    rc=$?
    if { [ $isa = scalar ] || [ $isa = neon ]; } && [ $rc = 0 ]; then
        say "ZERO_CPU_ISA=$isa on aarch64: runs"
    elif [ $isa != scalar ] && [ $isa != neon ] && [ $rc != 0 ] &&
        grep -q "ZERO_CPU_ISA=$isa: this processor or build lacks it (an x86-64 variant" \
            "$out/isa-$isa.aarch64"; then
        say "ZERO_CPU_ISA=$isa on aarch64: refused: $(grep -o "ZERO_CPU_ISA=$isa:.*" "$out/isa-$isa.aarch64" | head -1)"
    else
        say "ZERO_CPU_ISA=$isa on aarch64: WRONG (exit $rc):"
        tail -3 "$out/isa-$isa.aarch64"
        status=1
    fi
done
unset ZERO_CPU_ISA
if [ $status = 0 ]; then
    say "aarch64 equals x86-64 bit for bit"
    exit 0
fi
say "aarch64 differs from x86-64 (outputs in $out)"
exit 1
