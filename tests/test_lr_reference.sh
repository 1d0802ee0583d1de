#!/bin/sh
# DeepSpeed's learning-rate schedulers, measured: each line of tests/golden/ds_lr_schedules.txt
# (DeepSpeed 0.19.6's own WarmupLR, WarmupDecayLR and WarmupCosineLR, made by
# tests/golden/make_ds_lr_schedules.py) is the lr of 12 updates; train_mlp with that
# scheduler in its ds_config.json must record the same doubles in its trajectory: bit
# for bit, except during a log warmup, where libzero's log (src/base/exact_math.h: the
# same bits on every machine, within an ulp) may be an ulp from the libm log Python
# calls, and the lr, a quotient of two such logs, a few ulps (|difference| <= 1e-15 |lr|).
. "${ZERO_TEST_SRCDIR:-$(dirname "$0")}/lib.sh"

mlp=$top_builddir/examples/train_mlp
require_built "$mlp"
golden=$top_srcdir/tests/golden/ds_lr_schedules.txt

cases=0
while read -r name params lrs; do
    case $name in '#'*) continue ;; esac
    cases=$((cases + 1))
    printf '{"optimizer": {"type": "AdamW", "params": {"lr": 0.01}}, "scheduler": {"type": "%s", "params": %s}}\n' \
        "$name" "$params" >"$tmp/c$cases.json"
    run "case$cases" 0 "$mlp" --hidden 8 --layers 1 --batch 4 --steps 12 --quiet \
        --config "$tmp/c$cases.json" --trajectory "$tmp/t$cases.jsonl"
    expect_ok "case$cases" || continue
    got=$(sed -n 's/.*"lr":\([^,]*\),.*/\1/p' "$tmp/t$cases.jsonl" | tr '\n' ' ')
    # as doubles: awk reads the 17-digit decimals back to the same bits
    warm=$(echo "$params" | sed -n 's/.*"warmup_num_steps":\([0-9]*\).*/\1/p')
    log=0
    case $params in *'"warmup_type":"log"'*) log=1 ;; esac
    if ! awk -v want="$lrs" -v got="$got" -v warm="$warm" -v logw="$log" 'BEGIN {
            n = split(want, w, " "); m = split(got, g, " ")
            if (n != m) exit 1
            if (warm < 2) warm = 2
            for (i = 1; i <= n; i++) {
                d = w[i] - g[i]; if (d < 0) d = -d
                a = w[i] < 0 ? -w[i] : w[i]
                in_log = logw && i >= 2 && i <= warm + 1 # update i runs at iteration i - 2
                if (in_log ? d > 1e-15 * a : d != 0) {
                    print "update " i ": " g[i] " != DeepSpeed " w[i]; exit 1
                }
            }
        }'; then
        fail "$name $params: libzero's lr $got, DeepSpeed's $lrs"
    fi
done <"$golden"
[ "$cases" -eq 6 ] || fail "$cases cases read from $golden"
finish "lr schedules: libzero's trajectories give DeepSpeed 0.19.6's lr in $cases cases (bit for bit but for log warmups, within 1e-15)"
