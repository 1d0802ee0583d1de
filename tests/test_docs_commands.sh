#!/bin/sh
# test_docs_commands.sh -- runs every command the course in docs/ shows and checks that
# its output still matches what the page shows.
#
# In docs/*.md a fenced block opened with ```console holds commands (lines starting
# with "$ ") each followed by the output the page shows. Every shown output line must
# appear in the real output, in order; other real lines may come between them (the
# page may leave lines out). Inside a shown line "..." stands for any text (timings),
# and a line that is only "..." just marks an omission. The commands run in one
# scratch directory per page, in page order, with `zero` and `train_mlp` on PATH and
# `mpirun` given the test suite's flags. A command whose program is missing here
# (python3 for docs/tools) is skipped with a note.
# Run by `make check' from the build directory; by hand: sh tests/test_docs_commands.sh.
# shellcheck source=SCRIPTDIR/lib.sh
. "${ZERO_TEST_SRCDIR:-$(dirname "$0")}/lib.sh"
require_built "$top_builddir/src/cli/zero" "$top_builddir/examples/train_mlp" \
    "$top_builddir/examples/train_gpt"

mkdir "$tmp/bin"
ln -s "$top_builddir/src/cli/zero" "$tmp/bin/zero"
ln -s "$top_builddir/examples/train_mlp" "$tmp/bin/train_mlp"
ln -s "$top_builddir/examples/train_gpt" "$tmp/bin/train_gpt"
PATH=$tmp/bin:$PATH
DOCS=$top_srcdir/docs
export PATH DOCS

# the pages' `mpirun -np N ...' gets the suite's flags
mpirun() {
    mpirun_with_flags "$@"
}

commands=0
skipped=0

# split PAGE: writes $tmp/cmd.N (one command) and $tmp/want.N (its shown output)
split_page() {
    rm -f "$tmp"/cmd.* "$tmp"/want.*
    awk -v dir="$tmp" '
        /^```console[ \t]*$/ { inside = 1; next }
        /^```/ { inside = 0; next }
        inside && /^\$ / { n++; print substr($0, 3) > (dir "/cmd." n); close(dir "/cmd." n);
                           printf "" > (dir "/want." n); next }
        inside && n > 0 { print >> (dir "/want." n) }
        END { print n + 0 > (dir "/count") }
    ' "$1"
}

# matches WANT GOT: every line of WANT (but lone "...") appears in GOT, in order
matches() {
    awk -v got="$2" '
        function pattern(s,    out, i, c) {
            out = ""
            for (i = 1; i <= length(s); i++) {
                if (substr(s, i, 3) == "...") { out = out ".*"; i += 2; continue }
                c = substr(s, i, 1)
                if (index("\\^$.[]|()*+?{}/", c)) out = out "\\" c
                else out = out c
            }
            return "^" out "$"
        }
        BEGIN { n = 0; while ((getline line < got) > 0) { sub(/[ \t]+$/, "", line); have[++n] = line } }
        { sub(/[ \t]+$/, "", $0) }
        $0 == "" || $0 == "..." || $0 ~ /^\[exit [0-9]+\]$/ { next }
        {
            re = pattern($0)
            while (at < n) { at++; if (have[at] ~ re) next }
            print "missing: " $0; bad = 1; exit
        }
        END { exit bad }
    ' "$1"
}

for page in "$DOCS"/*.md; do
    split_page "$page"
    count=$(cat "$tmp/count")
    [ "$count" -gt 0 ] || continue
    work=$tmp/work.$(basename "$page" .md)
    mkdir -p "$work"
    i=1
    while [ "$i" -le "$count" ]; do
        cmd=$(cat "$tmp/cmd.$i")
        prog=${cmd%% *}
        if ! command -v "$prog" >/dev/null 2>&1 && ! type "$prog" >/dev/null 2>&1; then
            echo "skip ($prog not found): $(basename "$page"): $cmd"
            skipped=$((skipped + 1))
            i=$((i + 1))
            continue
        fi
        commands=$((commands + 1))
        (cd "$work" && eval "$cmd") >"$tmp/got" 2>&1
        rc=$?
        if [ "$rc" -ne 0 ] && ompi_exit_race "$tmp/got"; then
            echo "$(basename "$page"): '$cmd': Open MPI's end-of-job race (tests/ompi_exit_race.sh): once more"
            (cd "$work" && eval "$cmd") >"$tmp/got" 2>&1
            rc=$?
        fi
        if [ "$rc" -ne 0 ] && ! grep -q '^\[exit [0-9]*\]$' "$tmp/want.$i"; then
            fail "$(basename "$page"): '$cmd' exited $rc"
            cat "$tmp/got"
        elif [ "$rc" -ne 0 ] && ! grep -q "^\[exit $rc\]\$" "$tmp/want.$i"; then
            fail "$(basename "$page"): '$cmd' exited $rc, the page says otherwise"
        elif ! why=$(matches "$tmp/want.$i" "$tmp/got"); then
            fail "$(basename "$page"): '$cmd': $why"
            echo "---- got:"
            cat "$tmp/got"
        fi
        i=$((i + 1))
    done
done

echo "$commands commands from docs/*.md run, $skipped skipped, $failures failed"
[ "$commands" -gt 0 ] || exit 99
[ "$failures" -eq 0 ]
