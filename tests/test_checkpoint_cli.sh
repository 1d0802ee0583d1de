#!/bin/sh
# test_checkpoint_cli.sh -- checkpoints end to end through the programs:
#   - train_mlp --save-checkpoint on 4 ranks (stage 3), --resume on 2 ranks
#     (stage 0) gives the same weights, byte for byte, as 6 uninterrupted steps
#     on 2 ranks (exact mode: 4 and 2 ranks sum atoms along the same tree);
#   - --keep-last prunes, `latest` names the newest step;
#   - zero ckpt export writes exactly the trained weights (re-saved through
#     --init-weights/--save-weights they are byte-identical to --save-weights);
#   - zero ckpt inspect verifies; a flipped byte makes it exit 1 naming the file,
#     section and tensor; usage errors exit 2.
# shellcheck source=SCRIPTDIR/lib.sh
. "${ZERO_TEST_SRCDIR:-$(dirname "$0")}/lib.sh"
train=$top_builddir/examples/train_mlp
zero=$top_builddir/src/cli/zero
require_built "$train" "$zero"

args="--hidden 16 --layers 2 --batch 8 --micro-batch 2 --lr 1e-2 --quiet"
ck=$tmp/ck
run straight 2 "$train" $args --stage 1 --steps 6 --save-weights "$tmp/straight.st"
expect_ok straight
run first 4 "$train" $args --stage 3 --steps 3 --save-checkpoint "$ck" --checkpoint-every 1 \
    --keep-last 2
expect_ok first
[ "$(cat "$ck/latest")" = step_000003 ] || fail "latest is '$(cat "$ck/latest")'"
[ ! -d "$ck/step_000001" ] && [ -d "$ck/step_000002" ] || fail "--keep-last 2 did not prune"
run resumed 2 "$train" $args --stage 0 --steps 6 --resume "$ck" --save-weights "$tmp/resumed.st" \
    --save-checkpoint "$ck"
expect_ok resumed
cmp -s "$tmp/straight.st" "$tmp/resumed.st" ||
    fail "4 ranks stage 3 -> resume on 2 ranks stage 0 differs from 6 steps on 2 ranks"

run inspect 0 "$zero" ckpt inspect "$ck"
expect_ok inspect
grep -q "step 6 .* world size 2 | stage 0" "$tmp/inspect.out" || fail "inspect: no step line"
grep -q '"next_step":6' "$tmp/inspect.out" || fail "inspect: no data position"
grep -q "verify: all 2 rank files ok" "$tmp/inspect.out" || fail "inspect: not verified"

run export 0 "$zero" ckpt export "$ck" -o "$tmp/export.st"
expect_ok export
run roundtrip 0 "$train" $args --steps 0 --init-weights "$tmp/export.st" \
    --save-weights "$tmp/roundtrip.st"
expect_ok roundtrip
cmp -s "$tmp/roundtrip.st" "$tmp/resumed.st" || fail "exported weights differ from the trained ones"
run export16 0 "$zero" ckpt export "$ck" -o "$tmp/export16.st" --dtype bf16
expect_ok export16
[ "$(wc -c <"$tmp/export16.st")" -lt "$(wc -c <"$tmp/export.st")" ] ||
    fail "bf16 export not smaller"

# a flipped byte in rank 1's master section of layers.0 (its shard's first chunk)
file=$ck/step_000006/rank-00001.bin
printf '\377' | dd of="$file" bs=1 seek=5000 conv=notrunc 2>/dev/null
run corrupt 0 "$zero" ckpt inspect "$ck"
[ "$rc" -eq 1 ] || fail "inspect of a corrupt checkpoint: exit $rc, expected 1"
named="rank-00001.bin: section .* of unit layers.0: chunk 0 (elements .*layers.0.*): checksum"
grep -q "$named mismatch (stored 0x" \
    "$tmp/corrupt.err" || { cat "$tmp/corrupt.err"; fail "inspect: corruption not named"; }
run load_corrupt 2 "$train" $args --steps 7 --resume "$ck"
[ "$rc" -ne 0 ] && grep -q "checksum mismatch" "$tmp/load_corrupt.err" ||
    fail "--resume from a corrupt checkpoint: exit $rc"

run usage 0 "$zero" ckpt export "$ck"
[ "$rc" -eq 2 ] || fail "export without -o: exit $rc, expected 2"
run usage2 0 "$zero" ckpt export "$ck" -o x --dtype int8
[ "$rc" -eq 2 ] || fail "export --dtype int8: exit $rc, expected 2"
run missing 0 "$zero" ckpt inspect "$tmp/nothing"
[ "$rc" -eq 1 ] || fail "inspect of a missing directory: exit $rc, expected 1"
run flags 0 "$train" $args --keep-last 2
[ "$rc" -eq 2 ] || fail "--keep-last without --save-checkpoint: exit $rc, expected 2"

finish "test_checkpoint_cli: ok"
