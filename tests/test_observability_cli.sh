#!/bin/sh
# test_observability_cli.sh -- the zero subcommands that show what ZeRO does, end to end:
#   - zero estimate prints the ZeRO paper's Figure 1 and Table 1 digits and DeepSpeed's
#     estimator lines, and writes an SVG chart;
#   - zero schedule, at 2 and 3 ranks and every stage, lists the step and its totals
#     agree with the measured comm stats and the 2Ψ / 3Ψ theory (no MISMATCH, exit 0);
#   - zero memory: the measured ledger equals the formula in all stages, SVG written;
#   - zero verify: stages 0-3 (and world sizes 3 and 1) are bit-identical, and a one-ulp
#     perturbation is found at the right step, tensor and element;
#   - bad flags exit 2 naming the flag; every command's flags come from its table
#     (src/program/flags.h): a list's items are checked, a flag without its value
#     says so, one without a table entry is unknown.
# Run by `make check' from the build directory; by hand: sh tests/test_observability_cli.sh.
# shellcheck source=SCRIPTDIR/lib.sh
. "${ZERO_TEST_SRCDIR:-$(dirname "$0")}/lib.sh"
zero=$top_builddir/src/cli/zero
require_built "$zero"

# has NAME REGEX: the output of NAME has a line matching the extended regex
has() {
    grep -Eq -- "$2" "$tmp/$1.out" || { fail "$1: no line matching '$2'"; show "$1"; }
}

# ---- estimate ----
run fig1 0 "$zero" estimate --params 7.5e9 --ranks 64 --svg "$tmp/fig1.svg"
[ "$rc" -eq 0 ] || fail "estimate exited $rc"
has fig1 '^0 +DP +16Ψ +120,000,000,000 +120 +111\.76$'
has fig1 '^1 +Pos +4Ψ \+ 12Ψ/N +31,406,250,000 +31\.4 '
has fig1 '^2 +Pos\+g +2Ψ \+ 14Ψ/N +16,640,625,000 +16\.6 '
has fig1 '^3 +Pos\+g\+p +16Ψ/N +1,875,000,000 +1\.9 '
grep -q '</svg>' "$tmp/fig1.svg" 2>/dev/null || fail "estimate --svg wrote no SVG"
grep -q '>1.9 GB<' "$tmp/fig1.svg" 2>/dev/null || fail "estimate --svg: stage 3 is not the text's 1.9"
# --offload cpu: the chart draws the device column the text prints (28/28/17.5/7), not 112/...
run offsvg 0 "$zero" estimate --params 7e9 --ranks 4 --offload cpu --svg "$tmp/off.svg"
has offsvg '^2 +Pos\+g +2Ψ \+ 2Ψ/N +17,500,000,000 +17\.5 '
for total in '>28 GB<' '>17.5 GB<' '>7 GB<' '>84 GB<' '>21 GB<'; do
    grep -q "$total" "$tmp/off.svg" 2>/dev/null || fail "estimate --offload cpu --svg: no $total bar"
done
! grep -Eq '>(112|49|38.5) GB<' "$tmp/off.svg" || fail "estimate --offload cpu --svg: no-offload bars"
run table1 0 "$zero" estimate --params 1e12 --ranks 1,4,16,64,256,1024
has table1 '^ +64 +4187 +2218 +250$'
has table1 '^ +1024 +4011 +2013 +15\.6$'
run seven 0 "$zero" estimate --params 7e9 --ranks 4
has seven ' 112 +104\.31$'
has seven ' 38\.5 +35\.86$'
run ds 0 "$zero" estimate --params 2851e6 --nodes 1 --gpus-per-node 8 --largest-layer 32e6 \
    --deepspeed
has ds '^ +127\.45GB \| +5\.31GB \| offload_optimizer=cpu$'
has ds '^ +71\.69GB \| +0\.12GB \| offload_param=cpu , offload_optimizer=cpu , zero_init=1$'
has ds '^ +1\.43GB \| +6\.09GB \| offload_param=none, offload_optimizer=none, zero_init=1$'
run gpt 0 "$zero" estimate --n-layer 12 --n-head 12 --n-embd 768 --ranks 8
has gpt '^Ψ = 124,439,808 parameters, N = 8 ranks$'
run nvme 0 "$zero" estimate --params 2.5e9 --ranks 2 --offload nvme --nvme-bandwidth 2
has nvme '^3      Pos\+g\+p     2Ψ/N  .* 14Ψ/N +17\.5 +22\.5 +17\.5$'
has nvme 'a stage-3 step spends at least 20\.00 s on the disk'
run badflag 0 "$zero" estimate --params lots
[ "$rc" -eq 2 ] || fail "estimate --params lots exited $rc, expected 2"
grep -q -- '--params' "$tmp/badflag.err" || fail "estimate: the error does not name --params"

# ---- schedule: every stage at 2 and 3 ranks ----
tiny="--hidden 16 --layers 2 --align 64 --micro-batch 2"
for np in 2 3; do
    for stage in 0 1 2 3; do
        name=schedule_np${np}_s$stage
        # shellcheck disable=SC2086 # $tiny is a list of words
        run "$name" "$np" "$zero" schedule --stage "$stage" --persistence 0 $tiny
        if [ "$rc" -ne 0 ] || grep -q MISMATCH "$tmp/$name.out"; then
            fail "$name: exit $rc or MISMATCH"
            show "$name"
            continue
        fi
        has "$name" "^theory: (3?2?Ψ|\(3Ψ - Ψp - Ψr\))\(N-1\)/N = .* elements  ok$"
        has "$name" '^  all +[0-9,]+ +[0-9,]+  ok$'
        has "$name" ' step +comp +optimizer '
        case $stage in
        0) has "$name" ' comm +reduce +layers\.1 .* all_reduce bucket 0' ;;
        3) has "$name" ' comm +release +layers\.0 ' ;;
        *) has "$name" ' comm +param_gather +layers\.0 ' ;;
        esac
    done
done
run schedule_rank1 2 "$zero" schedule --stage 2 --rank 1 $tiny
has schedule_rank1 'Adam on shard 1: \[[0-9,]+, [0-9,]+\) of '

# ---- memory ----
run memory 3 "$zero" memory $tiny --svg "$tmp/memory.svg"
[ "$rc" -eq 0 ] || { fail "memory exited $rc"; show memory; }
has memory '^  check +ok +ok +ok +ok$'
grep -q 'theory' "$tmp/memory.svg" 2>/dev/null || fail "memory --svg wrote no chart"

# ---- verify ----
run verify_same 3 "$zero" verify $tiny --steps 2 --worlds 3,1
[ "$rc" -eq 0 ] || { fail "verify exited $rc"; show verify_same; }
has verify_same '^all 8 configurations bit-identical after every one of 2 steps$'
run verify_perturbed 2 "$zero" verify $tiny --steps 4 --perturb 2:3:layers.1.2.weight:17
[ "$rc" -eq 1 ] || fail "verify --perturb exited $rc, expected 1"
has verify_perturbed '^stage 2, N = 2 differs from stage 0, N = 2: first at step 3, unit layers\.1, tensor layers\.1\.2\.weight, element 17 \[0, 17\]: '
has verify_perturbed '^1 of 3 configurations differ$'
# N = 3 with two micro-steps: the default atom order sums in another tree than one
# rank does (the contract's limit), and the report says why and what gives one bits
run verify_order 3 "$zero" verify --worlds 3,1 --stages 0 --hidden 16 --layers 2 --align 64 \
    --micro-batch 2 --batch 12 --steps 1
[ "$rc" -eq 1 ] || fail "verify --worlds 3,1 with two micro-steps exited $rc, expected 1"
has verify_order '^note: with micro-step-major atoms \(the default\) N = 3 reduces the 3 atoms of each of its 2 micro-steps together, .*--atom-order rank_major'
run verify_order_rank 3 "$zero" verify --worlds 3,1 --stages 0 --hidden 16 --layers 2 \
    --align 64 --micro-batch 2 --batch 12 --steps 1 --atom-order rank_major
[ "$rc" -eq 0 ] || { fail "verify --atom-order rank_major exited $rc"; show verify_order_rank; }
grep -q '^note:' "$tmp/verify_order_rank.out" && fail "verify_order_rank: a note where all agree"
run verify_bad 2 "$zero" verify --perturb 2
[ "$rc" -eq 2 ] || fail "verify --perturb 2 exited $rc, expected 2"

# bad_flag NAME TEXT COMMAND...: COMMAND (one process) exits 2 and its stderr holds TEXT
bad_flag() {
    name=$1
    text=$2
    shift 2
    run "$name" 0 "$@"
    expect_rc "$name" 2 && expect_text "$name" err "$text"
}
bad_flag list_empty_item "--stages: '0,,1' is not valid (see --help)" "$zero" verify --stages 0,,1
bad_flag list_range "--worlds: '1,0' is not valid (see --help)" "$zero" verify --worlds 1,0
bad_flag list_long "--stages: '0,1,2,3,0,1,2,3,0' is not valid" "$zero" verify --stages 0,1,2,3,0,1,2,3,0
bad_flag list_ranks "--ranks: '4,' is not a list of up to 16 rank counts >= 1" \
    "$zero" estimate --params 1e9 --ranks 4,
bad_flag no_value "zero verify: --steps needs a value" "$zero" verify --steps
bad_flag no_value2 "zero schedule: --rank needs a value" "$zero" schedule --rank
bad_flag unknown_last "zero verify: unknown argument '--nope' (see --help)" "$zero" verify --nope
bad_flag unknown_est "zero estimate: unknown option '--nope' (see --help)" "$zero" estimate --nope
bad_flag stage_memory "runs every stage: no --stage" "$zero" memory --stage 1
bad_flag alias_value "zero envelope: -o needs a value" "$zero" envelope a b -o
run list_ok 0 "$zero" estimate --params 1e9 --ranks 1,2,4
expect_rc list_ok 0
has list_ok '^Ψ = 1,000,000,000 parameters, N = 1, 2, 4$'
has list_ok '^ +4 +7 +5\.5 +4$'

finish "all observability command checks passed"
