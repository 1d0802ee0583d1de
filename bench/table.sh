#!/bin/sh
# table.sh -- issue 18's table for libzero: s/step (median of steps 3-10, max over
# ranks) and peak RSS per rank for fp32 and bf16 at stages 0-3, N = 2, on the toy MLP
# (hidden 1024, 12 blocks, global batch 32), each stage in a fresh job (peak RSS is per
# process), with the step's roofline (bench/roofline.c) next to it, and the CPU time of
# the optimizer's and the norm's kernels on their thread (steadier than wall time).
#
#   [PRECISIONS="fp32 bf16 fp16"] bench/table.sh [BUILDDIR] [extra bench/roofline flags]
#
# Runs one job at a time, the precisions of one stage back to back (so their ratio,
# printed last, is measured side by side); on a shared machine only ratios within one
# run mean much. PRECISIONS lists the precisions (default fp32 bf16; the first is
# the reference of the ratio rows).
set -u
build=${1:-.}
[ $# -gt 0 ] && shift
prog="$build/bench/roofline"
if [ ! -x "$prog" ]; then
    echo "table.sh: $prog is not built (make bench/roofline in the build directory)" >&2
    exit 2
fi
mpirun=${MPIRUN:-mpirun}
flags="--allow-run-as-root --oversubscribe --bind-to none"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1
rows=$(mktemp) || exit 2
trap 'rm -f "$rows"' EXIT
precisions=${PRECISIONS:-fp32 bf16}
for stage in 0 1 2 3; do
    for precision in $precisions; do
        # shellcheck disable=SC2086 # $flags is a list of words
        out=$($mpirun $flags -np 2 "$prog" --stage "$stage" --precision "$precision" "$@") || {
            echo "table.sh: stage $stage $precision failed" >&2
            exit 1
        }
        echo "$out" | grep -v '^row:'
        echo "$out" | grep '^row:' >>"$rows"
    done
done
# the table: one line per precision, stages across; compute per sample over stage 0's
awk '
function field(name,   i, kv) {
    for (i = 2; i <= NF; i++) { split($i, kv, "="); if (kv[1] == name) return kv[2] }
    return ""
}
{
    p = field("precision"); s = field("stage")
    step[p, s] = field("step_s"); roof[p, s] = field("roofline_s")
    rss[p, s] = field("rss_mib"); cps[p, s] = field("compute_per_sample_ms")
    cpu[p, s] = field("cpu_s")
    ocpu[p, s] = field("optimizer_cpu_ms"); ncpu[p, s] = field("norm_cpu_ms")
    if (!(p in seen)) { seen[p] = 1; order[++np] = p }
}
END {
    printf "\n| libzero, N = 2 | stage 0 | stage 1 | stage 2 | stage 3 |\n|---|---|---|---|---|\n"
    for (i = 1; i <= np; i++) {
        p = order[i]
        printf "| %s s/step |", p; for (s = 0; s < 4; s++) printf " %.2f |", step[p, s]; printf "\n"
        printf "| %s CPU s/step (busiest rank, all threads) |", p; for (s = 0; s < 4; s++) printf " %.2f |", cpu[p, s]; printf "\n"
        printf "| %s step / roofline |", p; for (s = 0; s < 4; s++) printf " %.2fx |", step[p, s] / roof[p, s]; printf "\n"
        printf "| %s compute per sample / stage 0 |", p; for (s = 0; s < 4; s++) printf " %.2f |", cps[p, s] / cps[p, 0]; printf "\n"
        printf "| %s peak RSS per rank, MiB |", p; for (s = 0; s < 4; s++) printf " %d |", rss[p, s]; printf "\n"
        printf "| %s optimizer CPU ms (adam entry, its thread) |", p; for (s = 0; s < 4; s++) printf " %.1f |", ocpu[p, s]; printf "\n"
        printf "| %s norm sums CPU ms (sumsq_blocks, its thread) |", p; for (s = 0; s < 4; s++) printf " %.1f |", ncpu[p, s]; printf "\n"
    }
    for (i = 2; i <= np; i++) {
        p = order[i]; q = order[1]
        printf "| %s s/step / %s s/step |", p, q; for (s = 0; s < 4; s++) printf " %.2f |", step[p, s] / step[q, s]; printf "\n"
        printf "| %s CPU s/step / %s CPU s/step |", p, q; for (s = 0; s < 4; s++) printf " %.2f |", cpu[p, s] / cpu[q, s]; printf "\n"
        printf "| %s optimizer CPU / %s optimizer CPU |", p, q; for (s = 0; s < 4; s++) printf " %.2f |", ocpu[p, s] / ocpu[q, s]; printf "\n"
    }
}' "$rows"
