#!/bin/sh
# test_checkpoint_atom_order.sh -- a checkpoint records libzero.atom_order (which
# samples each rank reads at each micro-step), at 2 and 3 ranks:
#   - train_mlp --atom-order rank_major saves it; zero ckpt inspect prints it;
#   - --resume without the flag (micro_step_major) exits 1 naming the step
#     directory, the key, both orders and the flag to add, before any step, and
#     leaves the checkpoint directory byte for byte as it was (no new step, no
#     weights written);
#   - --resume with the flag ends with the same weights, byte for byte, as the
#     uninterrupted rank-major run.
# shellcheck source=SCRIPTDIR/lib.sh
. "${ZERO_TEST_SRCDIR:-$(dirname "$0")}/lib.sh"
train=$top_builddir/examples/train_mlp
zero=$top_builddir/src/cli/zero
require_built "$train" "$zero"

# batch 12 of micro-batches 2: accumulation 3 on 2 ranks, 2 on 3 ranks
args="--hidden 16 --layers 2 --batch 12 --micro-batch 2 --lr 1e-2 --stage 2 --quiet"
# tree DIR: every file under DIR with its checksum, for "nothing changed"
tree() {
    (cd "$1" && find . -type f | LC_ALL=C sort | xargs cksum)
}
for n in 2 3; do
    ck=$tmp/ck$n
    # shellcheck disable=SC2086 # $args is a list of words
    run straight$n "$n" "$train" $args --atom-order rank_major --steps 4 \
        --save-weights "$tmp/straight$n.st"
    expect_ok straight$n
    # shellcheck disable=SC2086
    run first$n "$n" "$train" $args --atom-order rank_major --steps 2 --save-checkpoint "$ck"
    expect_ok first$n
    run inspect$n 0 "$zero" ckpt inspect "$ck"
    expect_ok inspect$n && expect_text inspect$n out "| mode exact | atom order rank_major |"

    tree "$ck" >"$tmp/before$n"
    # shellcheck disable=SC2086
    run wrong$n "$n" "$train" $args --steps 4 --resume "$ck" --save-checkpoint "$ck" \
        --save-weights "$tmp/wrong$n.st"
    expect_error wrong$n 1 "train_mlp: --resume: .*ck$n/step_000002: config.libzero.atom_order is rank_major in the checkpoint but micro_step_major in this run"
    expect_text wrong$n err 'resume with libzero.atom_order = "rank_major" (the trainers'"'"' --atom-order rank_major)'
    tree "$ck" >"$tmp/after$n"
    cmp -s "$tmp/before$n" "$tmp/after$n" ||
        fail "$n ranks: the refused resume changed $ck: $(diff "$tmp/before$n" "$tmp/after$n")"
    [ ! -e "$tmp/wrong$n.st" ] || fail "$n ranks: the refused resume wrote weights"

    # shellcheck disable=SC2086
    run resumed$n "$n" "$train" $args --atom-order rank_major --steps 4 --resume "$ck" \
        --save-weights "$tmp/resumed$n.st"
    expect_ok resumed$n
    cmp -s "$tmp/straight$n.st" "$tmp/resumed$n.st" ||
        fail "$n ranks: the rank-major resume differs from 4 uninterrupted rank-major steps"
done

finish "test_checkpoint_atom_order: ok"
