#!/bin/sh
# device_checks.sh -- the cuda backend's GPU checks, in one run, on a machine with a GPU.
#
#   sh tests/gpu/device_checks.sh        (from the repository root; results under $OUT)
#
# Two ways to get the programs:
#   1. built here, when the machine has the whole tool chain (mpicc, OpenBLAS, jansson,
#      Check, nvcc, NCCL) and a configure script: ./configure --with-cuda --with-nccl in
#      build-gpu/, make, the CUDA tests through `make check';
#   2. prebuilt, from .gpu-bundle/ (tests/gpu/make_bundle.sh, run on a machine without a
#      GPU): static programs plus the Debian packages of their shared libraries, unpacked
#      under /tmp/zero-deps. This is the way for the lent H200, whose image has the CUDA
#      toolkit and PyTorch (with NCCL) but no MPI or BLAS.
#
# Through the device tool (one call, about 5 minutes of the 15):
#   here:   autoreconf -fi && sh tests/gpu/make_bundle.sh
#   device: run(command="sh tests/gpu/device_checks.sh", carry=[".gpu-bundle"],
#               timeout_s=540), then give_back
#
# Steps (each under `timeout', the whole under 8 minutes): environment report; CUDA unit
# tests at 1 rank (NCCL), 1 rank host-staged, 2 ranks on one GPU (host-staged); GEMM rate
# fp32/fp16/bf16 at 8192^3; the toy MLP on cpu and cuda at stages 0 and 3 (losses side by
# side); a larger MLP on cuda at stages 0 and 3 for step time. Exit 77 without a GPU.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-$root/gpu-out}
mkdir -p "$OUT"
summary=$OUT/summary.txt
logs=$OUT/logs.txt # every step's output, one after the other ($OUT brings back 8 files)
work=$(mktemp -d)
: >"$summary"
: >"$logs"
status=0

say() { echo "$*" | tee -a "$summary"; }

# step NAME SECONDS COMMAND...: runs it with a time limit; output in $work/NAME.log and $logs
step() {
    name=$1 limit=$2
    shift 2
    t0=$(date +%s)
    timeout "$limit" "$@" >"$work/$name.log" 2>&1
    rc=$?
    t1=$(date +%s)
    { echo "==== $name (exit $rc): $*"; cat "$work/$name.log"; } >>"$logs"
    case $rc in
        0) verdict=PASS ;;
        77) verdict=SKIP ;;
        124) verdict="TIMEOUT after ${limit}s" ;;
        *) verdict="FAIL (exit $rc)" ;;
    esac
    [ "$rc" -eq 0 ] || [ "$rc" -eq 77 ] || status=1
    say "$(printf '%-28s %-22s %4ss' "$name" "$verdict" "$((t1 - t0))")"
    return $rc
}

# ---------------------------------------------------------------- environment
{
    echo "date: $(date -u)"; uname -a
    nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm \
        --format=csv 2>&1
    command -v nvcc >/dev/null && nvcc --version | tail -n 2
    for t in mpicc mpirun autoreconf pkg-config dpkg python3; do
        printf '%-12s %s\n' "$t" "$(command -v $t || echo -)"
    done
    ldconfig -p 2>/dev/null | grep -E 'libnccl|libcublas\.|libcudart|libopenblas|libmpi\.' 
} >"$OUT/env.txt" 2>&1
gpu=$(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader 2>/dev/null)
say "GPU: ${gpu:-none}"

# ZERO_GPU_DRY_RUN=1 goes on without a GPU (the tests then skip): a rehearsal of the
# bundle's unpacking and launching on a machine without one
if ! nvidia-smi -L >/dev/null 2>&1 && [ "${ZERO_GPU_DRY_RUN:-0}" = 0 ]; then
    say "no GPU found (nvidia-smi -L failed): nothing to check"
    exit 77
fi

# ---------------------------------------------------------------- CUDA libraries
# cudart, cuBLAS and NCCL (CUDA 13): the toolkit's, the system's, or those of PyTorch's
# wheels (site-packages/nvidia/*/lib), the first copy found of each
sites=$(python3 -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null)
libpath=
for lib in libcudart.so.13 libcublas.so.13 libcublasLt.so.13 libnccl.so.2; do
    # shellcheck disable=SC2086 # $sites: one word per folder
    f=$(find -H /usr/local/cuda/lib64 /usr/local/cuda/targets /usr/lib/x86_64-linux-gnu \
        /usr/local/lib $sites -maxdepth 4 -name "$lib" 2>/dev/null | head -n 1)
    [ -n "$f" ] && libpath=$libpath:$(dirname "$f")
    echo "$lib: ${f:-not found}" >>"$OUT/env.txt"
done
export LD_LIBRARY_PATH="${libpath#:}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# ---------------------------------------------------------------- programs
bundle=$root/.gpu-bundle
if [ -d "$bundle/bin" ]; then
    deps=/tmp/zero-deps
    mkdir -p "$deps"
    for f in "$bundle"/debs/*.deb; do
        [ -e "$f" ] || continue
        if command -v dpkg >/dev/null; then
            dpkg -x "$f" "$deps"
        else # no dpkg: a .deb is an ar archive holding data.tar.*
            python3 - "$f" "$deps" <<'PY'
import io, sys, tarfile
data = open(sys.argv[1], 'rb').read()
pos = 8
while pos < len(data):
    name = data[pos:pos + 16].decode().strip().rstrip('/')
    size = int(data[pos + 48:pos + 58].decode().strip())
    body = data[pos + 60:pos + 60 + size]
    if name.startswith('data.tar'):
        tarfile.open(fileobj=io.BytesIO(body)).extractall(sys.argv[2])
    pos += 60 + size + (size & 1)
PY
        fi
    done
    arch=x86_64-linux-gnu
    ld=$deps/usr/lib/$arch:$deps/usr/lib/$arch/openmpi/lib:$deps/lib/$arch
    export LD_LIBRARY_PATH="$ld:$LD_LIBRARY_PATH"
    export OPAL_PREFIX=$deps/usr OPAL_LIBDIR=$deps/usr/lib/$arch/openmpi/lib
    export PATH="$deps/usr/bin:$PATH"
    bin=$bundle/bin
    test_bin=$bin/test_cuda_backend gemm_bin=$bin/gemm_bench mlp_bin=$bin/train_mlp
    mpirun_bin=$deps/usr/bin/orterun
    say "programs: prebuilt bundle (.gpu-bundle), Open MPI unpacked under $deps"
elif command -v mpicc >/dev/null && [ -x "$root/configure" ]; then
    build=$root/build-gpu
    mkdir -p "$build"
    (cd "$build" && "$root/configure" --with-cuda --with-nccl --disable-shared) \
        >>"$logs" 2>&1 || { say "configure failed (see logs.txt)"; exit 1; }
    step build 300 make -C "$build" -j"$(nproc)" || exit 1
    test_bin=$build/tests/test_cuda_backend gemm_bin=$build/tests/gpu/gemm_bench
    mlp_bin=$build/examples/train_mlp
    mpirun_bin=$(command -v mpirun)
    say "programs: built here in build-gpu"
else
    say "no .gpu-bundle and no tool chain (mpicc, ./configure): run tests/gpu/make_bundle.sh first"
    exit 1
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 CK_FORK=no
export OMPI_MCA_rmaps_base_oversubscribe=1 OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
mpirun_np="$mpirun_bin --allow-run-as-root --oversubscribe --bind-to none --mca pml ob1 \
 --mca btl self,vader -np" # split into words on use (no blanks in the paths)
"$mpirun_bin" --version >>"$logs" 2>&1 || say "mpirun does not start (see logs.txt)"

# ---------------------------------------------------------------- unit tests
# shellcheck disable=SC2086
step cuda_tests_np1_nccl 150 $mpirun_np 1 "$test_bin"
# shellcheck disable=SC2086
step cuda_tests_np1_staged 150 env ZERO_CUDA_COMM=mpi $mpirun_np 1 "$test_bin"
# shellcheck disable=SC2086
step cuda_tests_np2_staged 200 $mpirun_np 2 "$test_bin"

# ---------------------------------------------------------------- benchmarks
step gemm_8192 90 "$gemm_bin" cuda 8192 10
grep -h '^gemm' "$work/gemm_8192.log" | tee -a "$summary"

cfg_dir=$(mktemp -d)
for be in cpu cuda; do
    printf '{ "libzero": { "backend": "%s" } }\n' "$be" >"$cfg_dir/$be.json"
done
# the same small run on both backends: losses side by side (fp32; exact mode)
for stage in 0 3; do
    for be in cpu cuda; do
        step "mlp_small_${be}_s$stage" 60 "$mlp_bin" --config "$cfg_dir/$be.json" --stage "$stage" \
            --hidden 256 --layers 4 --batch 32 --steps 10
    done
    say "  stage $stage: step | loss cpu | loss cuda"
    grep '^step' "$work/mlp_small_cpu_s$stage.log" | cut -d'|' -f1,2 >"$work/a"
    grep '^step' "$work/mlp_small_cuda_s$stage.log" | cut -d'|' -f2 >"$work/b"
    paste -d'|' "$work/a" "$work/b" | tee -a "$summary"
done
# step time on cuda at a GPU-sized width
for stage in 0 3; do
    step "mlp_large_cuda_s$stage" 90 "$mlp_bin" --config "$cfg_dir/cuda.json" --stage "$stage" \
        --hidden 4096 --layers 8 --batch 256 --steps 6
    grep '^step' "$work/mlp_large_cuda_s$stage.log" | tail -n 2 | tee -a "$summary"
done
rm -rf "$cfg_dir" "$work"

if [ $status -eq 0 ]; then
    say "device_checks: all passed"
else
    say "device_checks: FAILURES (logs.txt has every step's output)"
fi
exit $status
