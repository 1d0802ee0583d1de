#!/bin/sh
# test_layers_planted.sh -- tests/test_layers.sh fails where it should: on a copy of the
# tree (its #include lines are all it reads) with an <mpi.h> planted in src/program and in
# src/cli (programs reach MPI through zero/job.h only), a zero/job.h planted in the
# engine (only programs start the job), the engine's struct in src/cli (it reaches
# the engine through zero/engine.h) and the driver in src/nn (the library never includes
# src/program), it names each planted file and exits 1.
# shellcheck source=SCRIPTDIR/lib.sh
. "${ZERO_TEST_SRCDIR:-$(dirname "$0")}/lib.sh"

copy=$tmp/tree
mkdir -p "$copy/examples" "$copy/tests" || exit 99
(cd "$top_srcdir" && cp -R src include backends "$copy/") || exit 99
plant() { # plant FILE LINE: LINE becomes FILE's first line
    { echo "$2"; cat "$copy/$1"; } >"$tmp/planted" && mv "$tmp/planted" "$copy/$1" || exit 99
}
plant src/program/program.c '#include <mpi.h>'
plant src/cli/verify.c '#include <mpi.h>'
plant src/engine/engine.c '#include "zero/job.h"'
plant src/cli/memory.c '#include "engine/engine_internal.h"'
plant src/nn/llama_model.c '#include "program/program.h"'

LAYERS_ROOT=$copy sh "$top_srcdir/tests/test_layers.sh" >"$tmp/out" 2>&1
rc=$?
[ "$rc" -eq 1 ] || fail "test_layers exited $rc on the planted tree, not 1: $(cat "$tmp/out")"
for line in 'src/program/program.c includes <mpi.h>' 'src/cli/verify.c includes <mpi.h>' \
    'src/engine/engine.c includes "zero/job.h"' \
    'src/cli/memory.c includes "engine/engine_internal.h"' \
    'src/nn/llama_model.c includes "program/program.h"'; do
    grep -qF "$line" "$tmp/out" || fail "test_layers did not name the plant: $line"
done
grep -q 'test_layers: 5 failure(s)' "$tmp/out" || fail "not 5 failures: $(cat "$tmp/out")"

finish "test_layers: the 5 planted includes are named, and it fails"
