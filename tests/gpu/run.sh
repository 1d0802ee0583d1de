#!/bin/sh
# run.sh -- libzero's GPU checks and GPU benchmark, in one run, on a machine with a GPU.
#
#   sh tests/gpu/run.sh                     (from anywhere; results under $OUT, else gpu-out/)
#   ZERO_GPU_DRY_RUN=1 sh tests/gpu/run.sh  (a rehearsal on a machine without a GPU)
#
# Steps, each under `timeout', in this order:
#   1. programs: unpack the prebuilt bundle, or build from source (see below);
#   2. the CUDA unit tests (tests/test_cuda_backend) at 1 rank (NCCL) and 2 ranks on the
#      one GPU (host-staged mode);
#   3. CUDA against the cpu backend (tests/test_cuda_training): the toy MLP and a tiny GPT,
#      10 steps, stages 0-3, final weights within 1e-5 (fp32) and 2e-3 (bf16, reasoning
#      in the test's comment) in native mode and the same bits in exact mode, and stage
#      3 with offload_param against the shard on the device (the gather race), at 1 rank
#      (NCCL), then 2 and 4 ranks on the one GPU through the host-staged mode; where the
#      1-rank run fails, once more with ZERO_CUDA_FUSED=off (the unfused kernels) to tell
#      a fused kernel's fault from the rest;
#   4. the GEMM rate of the cuda backend at 8192^3 (what the MFU below can hope for);
#   5. the GPU benchmark (bench/gpt_mfu): GPT-2 124M shapes (12 layers, 768 wide, 12 heads,
#      sequence 1024, vocabulary padded to 50304), bf16, batch 16, 1 rank: tokens/s and
#      MFU for stages 0-3, then stages 2 and 3 with CPU offload, then stage 2 with its
#      passes as CUDA Graphs (--cuda-graphs; not in the dry run); the GEMM and copy
#      ceilings measured in the same run and each variant's per-kernel-class times. Goals: MFU >= 40% at
#      stage 0 and >= 35% at stage 3 (reported, not a failure).
# First lines of summary.txt: the OS, glibc, the driver and the GPU; then, with the
# bundle, a refusal (exit 1, before any step) if the bundled programs and libraries
# need a newer glibc than the machine has (they were built on Debian 12: glibc 2.36).
# Open MPI runs with no ssh or rsh (OMPI_MCA_plm=isolated: every rank on this host) and
# without the CMA single copy, which needs ptrace rights
# (btl_vader_single_copy_mechanism=none). tests/gpu/rehearse.sh runs this script in
# dry-run mode in a root that holds only what the device image holds.
# Each step's limit is cut to the time left, so the whole run stays within
# ZERO_GPU_BUDGET_S seconds (default 470, under 8 minutes); a step with no time left is
# NOT RUN and counts as a failure. Exit status: 0 all passed (or skipped), 1 otherwise,
# 77 without a GPU (nvidia-smi -L fails) unless ZERO_GPU_DRY_RUN=1.
#
# ZERO_GPU_DRY_RUN=1 goes through every step without a GPU: the bundle is unpacked and
# Open MPI started as on the GPU machine, the CUDA programs start and SKIP (exit 77), and
# the benchmark runs on the cpu backend at tiny shapes so that its table, MFU and goal
# lines are rehearsed too (their numbers then mean nothing).
#
# Two ways to get the programs (ZERO_GPU_BUILD=auto picks the first that applies; bundle
# or source forces one):
#   bundle: prebuilt, from .gpu-bundle/ (tests/gpu/make_bundle.sh, run on a machine
#      without a GPU): static programs plus the Debian packages of their shared
#      libraries, unpacked under /tmp/zero-deps. This is the way for the lent H200, whose
#      image has the CUDA toolkit and PyTorch (with NCCL) but no MPI, BLAS or Check;
#   source: built here in build-cuda/ when the machine has the whole tool chain (mpicc,
#      OpenBLAS, jansson, Check, nvcc, NCCL) and a configure script (autoreconf -fi). The
#      build comes out of the same budget: its minutes shorten the later steps.
#
# Through the device tool (one call, about 8 minutes of the 15):
#   here:   autoreconf -fi && sh tests/gpu/make_bundle.sh && ZERO_GPU_DRY_RUN=1 sh tests/gpu/run.sh
#   device: run(command="sh tests/gpu/run.sh", carry=[".gpu-bundle"], timeout_s=540),
#           then give_back. $OUT brings back summary.txt, logs.txt and env.txt.
#
# PEAK: the dense bf16 TFLOP/s of the GPU for MFU, from nvidia-smi's name (H100/H200 SXM
# 989, H100 PCIe 756, H100/H200 NVL 835, A100 312), or ZERO_GPU_PEAK_TFLOPS.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)

# ---------------------------------------------------------------- helper: unpack the bundle
# run.sh --unpack DEST DEB...: the data of each .deb under DEST (a step of its own, so
# that it runs under `timeout' like every other)
if [ "${1:-}" = --unpack ]; then
    dest=$2
    shift 2
    for deb; do
        [ -e "$deb" ] || continue # no .deb at all: the pattern itself
        if command -v dpkg >/dev/null; then
            dpkg -x "$deb" "$dest" || exit 1
        else # no dpkg: a .deb is an ar archive holding data.tar.*
            python3 - "$deb" "$dest" <<'PY' || exit 1
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
    exit 0
fi

OUT=${OUT:-$root/gpu-out}
mkdir -p "$OUT"
summary=$OUT/summary.txt
logs=$OUT/logs.txt # every step's output, one after the other ($OUT brings back 8 files)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
: >"$summary"
: >"$logs"
table=$work/table # one line per step, printed at the end
: >"$table"
status=0
dry=${ZERO_GPU_DRY_RUN:-0}
budget=${ZERO_GPU_BUDGET_S:-470}
t_start=$(date +%s)

say() { echo "$*" | tee -a "$summary"; }

# step NAME SECONDS COMMAND...: runs it under `timeout', its limit cut to the time left;
# output in $work/NAME.log and $logs, verdict in $table
step() {
    name=$1 limit=$2
    shift 2
    left=$((budget - ($(date +%s) - t_start)))
    [ "$limit" -le "$left" ] || limit=$left
    if [ "$limit" -lt 10 ]; then # (mpirun killed while it starts can leave its ranks behind)
        printf '%-28s %-24s %5s\n' "$name" "NOT RUN (budget spent)" - | tee -a "$table"
        echo "==== $name: not run, ${budget}s budget spent" >>"$logs"
        : >"$work/$name.log"
        status=1
        return 1
    fi
    t0=$(date +%s)
    timeout -k 5 "$limit" "$@" >"$work/$name.log" 2>&1
    rc=$?
    t1=$(date +%s)
    { echo "==== $name (exit $rc, limit ${limit}s): $*"; cat "$work/$name.log"; } >>"$logs"
    case $rc in
        0) verdict=PASS ;;
        77) verdict=SKIP ;;
        124 | 137) verdict="TIMEOUT after ${limit}s" ;;
        *) verdict="FAIL (exit $rc)" ;;
    esac
    [ "$rc" -eq 0 ] || [ "$rc" -eq 77 ] || status=1
    printf '%-28s %-24s %4ss\n' "$name" "$verdict" "$((t1 - t0))" | tee -a "$table"
    return $rc
}

# ---------------------------------------------------------------- environment
# glibc's version: getconf, else ldd, else python3
glibc_version() {
    v=$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{ print $2 }')
    [ -n "$v" ] || v=$(ldd --version 2>/dev/null | head -n 1 | awk '{ print $NF }')
    [ -n "$v" ] || v=$(python3 -c 'import platform; print(platform.libc_ver()[1])' 2>/dev/null)
    echo "${v:-unknown}"
}
os=$(sed -n 's/^PRETTY_NAME="*\([^"]*\)"*$/\1/p' /etc/os-release 2>/dev/null)
glibc=$(glibc_version)
driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -n 1)
gpu=$(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader 2>/dev/null | head -n 1)
say "OS: ${os:-unknown} ($(uname -srm)); glibc ${glibc}; NVIDIA driver ${driver:-none}; GPU ${gpu:-none}"
{
    echo "date: $(date -u)"
    uname -a
    nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm \
        --format=csv 2>&1
    command -v nvcc >/dev/null && nvcc --version | tail -n 2
    for t in mpicc mpirun autoreconf pkg-config dpkg python3; do
        printf '%-12s %s\n' "$t" "$(command -v $t || echo -)"
    done
    ldconfig -p 2>/dev/null | grep -E 'libnccl|libcublas\.|libcudart|libopenblas|libmpi\.'
} >"$OUT/env.txt" 2>&1
say "libzero GPU run, $(date -u '+%Y-%m-%d %H:%M UTC'): GPU ${gpu:-none}"
if ! nvidia-smi -L >/dev/null 2>&1; then
    if [ "$dry" = 0 ]; then
        say "no GPU found (nvidia-smi -L failed): nothing to check"
        exit 77
    fi
    say "ZERO_GPU_DRY_RUN=1: a rehearsal without a GPU (CUDA steps skip; the benchmark runs on the cpu backend at tiny shapes)"
fi

# the peak for MFU: dense bf16 TFLOP/s per GPU
case $gpu in
    *H100*PCIe* | *H100*PCIE*) peak=756 ;;
    *H100*NVL* | *H200*NVL*) peak=835 ;;
    *H100* | *H200*) peak=989 ;; # GH200 too
    *A100*) peak=312 ;;
    *) peak= ;;
esac
peak=${ZERO_GPU_PEAK_TFLOPS:-$peak}

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
how=${ZERO_GPU_BUILD:-auto}
if [ "$how" = auto ]; then
    if [ -d "$bundle/bin" ]; then
        how=bundle
    elif command -v mpicc >/dev/null && [ -x "$root/configure" ]; then
        how=source
    else
        say "no .gpu-bundle and no tool chain (mpicc, ./configure): run tests/gpu/make_bundle.sh first"
        exit 1
    fi
fi
progs="tests/test_cuda_backend tests/test_cuda_training tests/gpu/gemm_bench bench/gpt_mfu"
case $how in
    bundle)
        [ -d "$bundle/bin" ] || { say "no $bundle/bin: run tests/gpu/make_bundle.sh first"; exit 1; }
        deps=/tmp/zero-deps
        mkdir -p "$deps"
        step unpack_bundle 60 sh "$0" --unpack "$deps" "$bundle"/debs/*.deb || exit 1
        arch=x86_64-linux-gnu
        # the newest glibc symbol version the bundle asks for, against this machine's
        need=$(find "$bundle/bin" "$deps" -type f \( -name '*.so*' -o -perm -u+x \) \
            -exec grep -aoh 'GLIBC_2\.[0-9][0-9.]*' {} + 2>/dev/null | sed -e "s/^GLIBC_//" -e "s/\\.$//" |
            sort -u -V | tail -n 1)
        newest=$(printf '%s\n%s\n' "${need:-0}" "$glibc" | sort -V | tail -n 1)
        if [ "$glibc" = unknown ] || [ "$newest" != "$glibc" ]; then
            say "REFUSED: the bundle needs glibc ${need:-?} (GLIBC_${need:-?} symbols), this machine has glibc $glibc: build the bundle on a system no newer than this one"
            exit 1
        fi
        say "glibc: the bundle needs ${need:-nothing}, the machine has $glibc"
        # libopenblas.so.0 lives only in openblas-pthread/: dpkg -x makes no
        # update-alternatives link
        ld=$deps/usr/lib/$arch:$deps/usr/lib/$arch/openblas-pthread:$deps/usr/lib/$arch/openmpi/lib
        ld=$ld:$deps/lib/$arch
        export LD_LIBRARY_PATH="$ld:$LD_LIBRARY_PATH"
        export OPAL_PREFIX=$deps/usr OPAL_LIBDIR=$deps/usr/lib/$arch/openmpi/lib
        export PMIX_INSTALL_PREFIX=$deps/usr/lib/$arch/pmix2 # its help files
        export PATH="$deps/usr/bin:$PATH"
        prog() { echo "$bundle/bin/$(basename "$1")"; }
        mpirun_bin=$deps/usr/bin/orterun
        say "programs: prebuilt bundle (.gpu-bundle), Open MPI unpacked under $deps"
        ;;
    source)
        build=$root/build-cuda
        mkdir -p "$build"
        if [ ! -f "$build/Makefile" ] || ! grep -q 'disable-shared' "$build/config.status"; then
            step configure 120 sh -c "cd '$build' && '$root/configure' --with-cuda --with-nccl \
--disable-shared" || exit 1
        fi
        # shellcheck disable=SC2086 # $progs: one word per program
        step build 300 make -C "$build" -j"$(nproc)" $progs || exit 1
        prog() { echo "$build/$1"; }
        mpirun_bin=$(command -v mpirun)
        say "programs: built here in build-cuda"
        ;;
    *)
        say "ZERO_GPU_BUILD=$how: expected auto, bundle or source"
        exit 2
        ;;
esac
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 CK_FORK=no
export OMPI_MCA_rmaps_base_oversubscribe=1 OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
# no ssh or rsh on the device: Open MPI's default launcher aborts even for local ranks
# (and singletons); the isolated launcher starts every rank on this host
export OMPI_MCA_plm=isolated
# the CMA single copy needs ptrace rights a sandbox may refuse
export OMPI_MCA_btl_vader_single_copy_mechanism=none
mpirun_np="$mpirun_bin --allow-run-as-root --oversubscribe --bind-to none --mca pml ob1 \
 --mca btl self,vader -np" # split into words on use (no blanks in the paths)
"$mpirun_bin" --version >>"$logs" 2>&1 || say "mpirun does not start (see logs.txt)"

# ---------------------------------------------------------------- CUDA unit tests
# 1 rank: NCCL; several ranks on the one GPU: the host-staged mode (ZERO_CUDA_COMM=auto)
# shellcheck disable=SC2086 # $mpirun_np: words
step cuda_backend_np1 60 $mpirun_np 1 "$(prog tests/test_cuda_backend)"
# shellcheck disable=SC2086
step cuda_backend_np2_staged 40 $mpirun_np 2 "$(prog tests/test_cuda_backend)"

# ---------------------------------------------------------------- CUDA against cpu, training
for np in 1 2 4; do
    name=cuda_training_np$np
    [ $np -gt 1 ] && name=${name}_staged
    t_limit=45
    [ $np -gt 1 ] || t_limit=60
    # shellcheck disable=SC2086
    step $name $t_limit $mpirun_np $np "$(prog tests/test_cuda_training)"
    rc_training=$?
    grep -h -E '^cuda (vs cpu|stage 3 offload)' "$work/$name.log" | sed "s/^cuda vs cpu:/np$np/; s/^cuda /np$np cuda /" >>"$work/training"
    # a failure at 1 rank: once more with native mode on the unfused kernels, so the
    # summary tells a fused kernel's fault (classifier, residual LayerNorm, the GEMM
    # epilogues incl. the bias gradient's) from the rest
    if [ $np -eq 1 ] && [ $rc_training -ne 0 ] && [ $rc_training -ne 77 ]; then
        # shellcheck disable=SC2086
        step cuda_training_np1_unfused 45 env ZERO_CUDA_FUSED=off $mpirun_np 1 \
            "$(prog tests/test_cuda_training)"
        grep -h -E '^cuda (vs cpu|stage 3 offload)' "$work/cuda_training_np1_unfused.log" |
            sed "s/^cuda vs cpu:/np1 unfused/; s/^cuda /np1 unfused cuda /" >>"$work/training"
    fi
done

# ---------------------------------------------------------------- GEMM rate
step gemm_8192 30 "$(prog tests/gpu/gemm_bench)" cuda 8192 10
grep -h '^gemm' "$work/gemm_8192.log" >"$work/gemm"

# ---------------------------------------------------------------- GPT-2 124M benchmark
mfu_bin=$(prog bench/gpt_mfu)
if [ "$dry" = 0 ]; then
    shapes="--backend cuda --dtype bf16 --batch 16 --steps 10 --warmup 3"
else # the cpu backend at tiny shapes: a rehearsal of the table and its reading
    shapes="--backend cpu --dtype bf16 --n-layer 2 --n-embd 64 --n-head 2 --block-size 32 \
--vocab-size 256 --batch 2 --steps 2 --warmup 1"
fi
peak_arg=${peak:+--peak-tflops $peak}
# shellcheck disable=SC2086 # $shapes, $peak_arg: words
step gpt124m_bf16_stages_0-3 120 $mpirun_np 1 "$mfu_bin" $shapes --stage 0,1,2,3 $peak_arg
# shellcheck disable=SC2086
step gpt124m_bf16_offload_2-3 60 $mpirun_np 1 "$mfu_bin" $shapes --stage 2,3 --offload cpu \
    $peak_arg
# the passes as CUDA Graphs (libzero.cuda_graphs): stage 2, beside its uncaptured row above
if [ "$dry" = 0 ]; then
    # shellcheck disable=SC2086
    step gpt124m_bf16_graphs_2 60 $mpirun_np 1 "$mfu_bin" $shapes --stage 2 --cuda-graphs \
        $peak_arg
fi

# the stored activations in bf16 (libzero.activations = "compute": the 16-bit epilogues,
# the stored-qkv flash attention, bf16 logits): stages 0 and 3, beside their fp32-activation rows
# shellcheck disable=SC2086
step gpt124m_bf16_act16_0_3 60 $mpirun_np 1 "$mfu_bin" $shapes --stage 0,3 --activations compute \
    $peak_arg

# ---------------------------------------------------------------- summary
say ""
say "$(printf '%-28s %-24s %5s' step result time)"
tee -a "$summary" <"$table"
if [ -s "$work/training" ]; then
    say ""
    say "CUDA vs cpu, weights after 10 steps: rel = max|cuda - cpu| / max|cpu| (native mode; exact mode: the same bits)"
    tee -a "$summary" <"$work/training"
fi
if [ -s "$work/gemm" ]; then
    say ""
    tee -a "$summary" <"$work/gemm"
fi
bench_logs="$work/gpt124m_bf16_stages_0-3.log $work/gpt124m_bf16_offload_2-3.log"
# shellcheck disable=SC2086 # $bench_logs: two files
if grep -q '^stage |' $bench_logs 2>/dev/null; then
    say ""
    # shellcheck disable=SC2086
    grep -h -m 1 '^bench/gpt_mfu:' $bench_logs | head -n 1 | tee -a "$summary"
    [ -n "$peak" ] || say "(no peak known for this GPU: set ZERO_GPU_PEAK_TFLOPS for MFU)"
    # shellcheck disable=SC2086
    grep -h -m 1 '^stage |' $bench_logs | head -n 1 | tee -a "$summary"
    # shellcheck disable=SC2086
    grep -h -E '^ +[0-3] \|' $bench_logs | tee -a "$summary"
    # where the time goes: the measured ceilings and the per-kernel-class lines (cuda)
    # shellcheck disable=SC2086
    grep -h -E '^(ceiling|kernel) ' $bench_logs | tee -a "$summary"
    if grep -q -E '^ +2 \|' "$work/gpt124m_bf16_graphs_2.log" 2>/dev/null; then
        say "with libzero.cuda_graphs (--cuda-graphs):"
        grep -h -E '^ +2 \||graph blockers' "$work/gpt124m_bf16_graphs_2.log" | tee -a "$summary"
    fi
    if grep -q -E '^ +[03] \|' "$work/gpt124m_bf16_act16_0_3.log" 2>/dev/null; then
        say "with libzero.activations = compute (--activations compute):"
        grep -h -E '^ +[03] \|' "$work/gpt124m_bf16_act16_0_3.log" | tee -a "$summary"
    fi
    # the goals, from the rows without offload: "stage | offload | ms | tok/s | MFU | ..."
    for goal in "0 40" "3 35"; do
        set -- $goal
        mfu=$(awk -F'|' -v s="$1" '$1 + 0 == s && $2 ~ /none/ { gsub(/ /, "", $5); print $5 }' \
            "$work/gpt124m_bf16_stages_0-3.log")
        case $mfu in
            '' | -) say "goal: stage $1 MFU >= $2%: not measured" ;;
            *) say "goal: stage $1 MFU $mfu% >= $2%: $(awk -v m="$mfu" -v g="$2" \
                'BEGIN { print (m + 0 >= g) ? "met" : "NOT met" }')" ;;
        esac
    done
fi
say ""
say "total $(($(date +%s) - t_start))s of the ${budget}s budget"
if [ $status -eq 0 ]; then
    say "run.sh: all passed"
else
    say "run.sh: FAILURES (logs.txt has every step's output)"
fi
exit $status
