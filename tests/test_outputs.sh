#!/bin/sh
# test_outputs.sh -- every writer replaces only regular files (src/base/file_replace.h):
# weights (--save-weights, zero ckpt export -o), checkpoints (their `latest`),
# traces, SVG charts and synthetic data refuse a FIFO, a directory and (as root,
# on a device node made in the scratch directory, never /dev/null itself) a
# character device, with the path in the message and a non-zero exit; the thing
# at the path is left as it was, and a regular file is still replaced.
# shellcheck source=SCRIPTDIR/lib.sh
. "${ZERO_TEST_SRCDIR:-$(dirname "$0")}/lib.sh"
mlp=$top_builddir/examples/train_mlp
zero=$top_builddir/src/cli/zero
require_built "$mlp" "$zero"

mkfifo "$tmp/fifo" || exit 99
mkdir "$tmp/dir"
ln -s fifo "$tmp/to_fifo"
targets="fifo dir to_fifo"
# a character device like /dev/null (major 1, minor 3), in the scratch directory
if [ "$(id -u)" -eq 0 ] && mknod "$tmp/chardev" c 1 3 2>/dev/null; then
    targets="$targets chardev"
fi

# untouched: still a FIFO / directory / link / character device
still_there() {
    case $1 in
    fifo) [ -p "$tmp/fifo" ] ;;
    dir) [ -d "$tmp/dir" ] && [ -z "$(ls -A "$tmp/dir")" ] ;;
    to_fifo) [ -L "$tmp/to_fifo" ] && [ -p "$tmp/to_fifo" ] ;;
    chardev) [ -c "$tmp/chardev" ] ;;
    esac
}

# check NAME TARGET: run NAME failed naming the target; nothing was replaced or left behind
check() {
    expect_error "$1" 1 "$tmp/$2: is .*not a regular file: refusing to replace it"
    still_there "$2" || fail "$1: $tmp/$2 was replaced"
    if ls -A "$tmp" | grep -q '\.tmp\.'; then
        fail "$1: a temporary was left behind: $(ls -A "$tmp")"
        rm -f "$tmp"/*.tmp.*
    fi
}

small="--hidden 8 --layers 1 --batch 4 --steps 1 --quiet"
run ck 0 "$mlp" $small --save-checkpoint "$tmp/ck"
expect_ok ck
for t in $targets; do
    run weights_$t 0 "$mlp" $small --save-weights "$tmp/$t"
    check weights_$t $t
    run export_$t 0 "$zero" ckpt export "$tmp/ck" -o "$tmp/$t"
    check export_$t $t
    run trace_$t 0 "$mlp" $small --trace "$tmp/$t"
    check trace_$t $t
    run svg_$t 0 "$zero" estimate --params 1e9 --ranks 4 --svg "$tmp/$t"
    check svg_$t $t
    run data_$t 0 "$mlp" --write-synthetic-data "$tmp/$t" --samples 4 --hidden 8
    check data_$t $t
done

# a checkpoint directory whose `latest` is a FIFO: refused at start-up, naming it
# (tests/test_faults.sh has the directory, /dev/null and step_* cases)
mkdir "$tmp/ck2"
mkfifo "$tmp/ck2/latest"
run latest 0 "$mlp" $small --save-checkpoint "$tmp/ck2"
expect_error latest 2 "$tmp/ck2/latest is a FIFO, not a regular file"
[ -p "$tmp/ck2/latest" ] || fail "latest: the FIFO was replaced"

# a regular file (and a symlink to one) is still replaced
echo old >"$tmp/regular"
run regular 0 "$zero" ckpt export "$tmp/ck" -o "$tmp/regular"
expect_ok regular
[ "$(head -c 3 "$tmp/regular")" != old ] || fail "regular: the old file was not replaced"

finish "test_outputs: weights, export, trace, SVG, data and latest refuse $targets"
