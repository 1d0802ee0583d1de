#!/bin/sh
# The environment knobs are one table: no getenv("ZERO_...") outside src/base/knobs.c,
# every knob of the table printed by `zero config --env` (with its value when set) and
# documented in docs/configuration.md, and nothing listed that the code does not read.
. "${ZERO_TEST_SRCDIR:-$(dirname "$0")}/lib.sh"

zero=$top_builddir/src/cli/zero
require_built "$zero"
src=$top_srcdir

# 1. the only reader
stray=$(grep -rn 'getenv("ZERO_[A-Z0-9]' "$src/src" "$src/backends" "$src/examples" "$src/include" |
    grep -v '^[^:]*src/base/knobs\.c:')
[ -z "$stray" ] || fail "getenv(\"ZERO_...\") outside src/base/knobs.c (read it through zero_knob):
$stray"

# 2. the table, the tool and the page name the same knobs
table=$(sed -n 's/^ *\[ZERO_KNOB_[A-Z0-9_]*\] *= *{"\(ZERO_[A-Z0-9_]*\)".*/\1/p' "$src/src/base/knobs.c" | sort)
[ -n "$table" ] || fail "no knob found in src/base/knobs.c"
enum=$(sed -n 's/^ *ZERO_KNOB_\([A-Z0-9_]*\),.*/ZERO_\1/p' "$src/include/zero/knobs.h" | sort)
[ "$table" = "$enum" ] || fail "include/zero/knobs.h's enum and src/base/knobs.c's table differ:
enum: $enum
table: $table"
run env 0 "$zero" config --env
if expect_ok env; then
    for k in $table; do
        grep -q "^$k[ =]" "$tmp/env.out" || fail "zero config --env does not list $k"
        grep -q "^$k[ =]" "$src/docs/configuration.md" || fail "docs/configuration.md does not list $k"
    done
fi
# a knob the code does not read (a name in the table no zero_knob() call uses)
for k in $table; do
    id=ZERO_KNOB_${k#ZERO_}
    grep -rq "zero_knob($id)" "$src/src" "$src/backends" ||
        fail "$k is in the table but no zero_knob($id) reads it"
done

# 3. a value set is shown as set
run set 0 env ZERO_CPU_ISA=scalar "$zero" config --env
expect_ok set && expect_line set out "ZERO_CPU_ISA=scalar"
run extra 0 "$zero" config --env x.json
expect_error extra 2 "--env takes no other argument"
finish "knobs: one table, listed by zero config --env and docs/configuration.md"
