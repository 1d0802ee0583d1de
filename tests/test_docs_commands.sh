#!/bin/sh
# test_docs_commands.sh -- runs every command the course shows (README.md and
# docs/*.md) as the pages show it, compares each page's printed output with the real
# output, whole, and checks the exercises' numeric answers.
#
# The convention of the pages (docs/README.md states it for readers):
#   ```console   commands and their output. A line "$ CMD" is a command; the lines
#                after it, up to the next "$ " line or the end of the block, are its
#                whole output (stdout and stderr together), and a last line
#                "[exit N]" says it exits N. There is no elision: a page that shows a
#                part of an output filters it in the command (| grep, | sed -n, | tail).
#   ```sh        set-up recipes (install, build, fuzz); not run here, they build
#                the tree this test runs in.
#   ```text, ``` recorded output of a run this test cannot make (hours, a cgroup, a
#                GPU) or a format; not run.
# What legitimately varies from run to run is masked on both sides before the
# comparison, and nothing else (see mask below): wall-clock timings (ms, s, tok/s,
# the seconds column of the comm tables), the checkpoint id (time and pid), and the
# scratch directory's path. Hashes, losses, byte counts and the ledger's MiB are
# exact-mode numbers, portable to every machine: they must match to the digit.
#
# Each page runs in its own scratch directory, in page order, after the set-up of
# docs/quickstart.md (its `export` lines, evaluated with the build's programs at
# build/; the root line only as root); README.md's commands run at the top of a
# tree that has build/, examples/ and README.md. `mpirun` is the suite's launcher
# with its transport flags but not --allow-run-as-root or --oversubscribe: those
# come from the pages (a command with more than 2 ranks, the pages' two-core
# machine, must say --oversubscribe; the test adds it only where this machine has
# fewer cores than the command's ranks). A command whose program is missing (python3
# for docs/tools) is skipped with a note.
#
# In the sanitizer build it runs the quick pages and the exercises only: what it
# claims, the pages' text, the default build checks; README.md's and
# docs/training.md's commands are training runs that test_train_gpt.sh and
# test_examples.sh make under the sanitizers too.
#
# Environment:
#   ZERO_DOCS_PAGES=LIST   only these pages (names as in docs/, or README.md); "quick"
#                          is the quick pages: quickstart, memory, stages, exactness
#                          and configuration
#   ZERO_DOCS_USER=NAME    run the commands as that user (runuser; the test must be
#                          root); tests/test_docs_user.sh does it for the quick pages
#   ZERO_DOCS_EXERCISES=1  check the exercises with ZERO_DOCS_PAGES too (which must
#                          then list memory.md and stages.md)
#   ZERO_UPDATE_DOCS=1     rewrite each differing output block in the page with the
#                          real output (then review with git diff; never in CI)
# Run by `make check' from the build directory; by hand: sh tests/test_docs_commands.sh.
# shellcheck source=SCRIPTDIR/lib.sh
. "${ZERO_TEST_SRCDIR:-$(dirname "$0")}/lib.sh"
require_built "$top_builddir/src/cli/zero" "$top_builddir/examples/train_mlp" \
    "$top_builddir/examples/train_gpt"

as_user=${ZERO_DOCS_USER:-}
update=${ZERO_UPDATE_DOCS:-0}
pages=${ZERO_DOCS_PAGES:-}
exercises=${ZERO_DOCS_EXERCISES:-0}
if under_sanitizers; then
    if [ -n "$as_user" ]; then
        echo "$test_name: as $as_user: skipped in the sanitizer build (it runs these pages as root there)"
        exit 77
    fi
    if [ -z "$pages" ]; then
        pages=quick
        exercises=1
    fi
fi
[ "$pages" = quick ] && pages="quickstart.md memory.md stages.md exactness.md configuration.md"

# The student's environment, not the suite's: Open MPI's root switches and
# oversubscription come from the pages or not at all.
unset OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM OMPI_MCA_rmaps_base_oversubscribe
transport_flags=
for flag in $mpirun_flags; do
    case $flag in
        --allow-run-as-root | --oversubscribe) ;;
        *) transport_flags="$transport_flags $flag" ;;
    esac
done
cores=$(nproc 2>/dev/null || echo 2)

if [ -n "$as_user" ]; then
    if [ "$(id -u)" -ne 0 ] || ! command -v runuser >/dev/null 2>&1 || ! id "$as_user" >/dev/null 2>&1; then
        echo "$test_name: running as $as_user needs root, runuser and that user: skipped"
        exit 77
    fi
    if ! runuser -u "$as_user" -- test -x "$top_builddir/src/cli/zero"; then
        echo "$test_name: $as_user cannot run $top_builddir/src/cli/zero (permissions): skipped"
        exit 77
    fi
    chmod 755 "$tmp"
fi

# The top of a source tree as the quickstart leaves it, then the quickstart's set-up.
top=$tmp/top
mkdir "$top"
ln -s "$top_builddir" "$top/build"
ln -s "$top_srcdir/examples" "$top/examples"
ln -s "$top_srcdir/docs" "$top/docs"
ln -s "$top_srcdir/README.md" "$top/README.md"
setup=$(awk '/^```sh/ { inside = 1; next } /^```/ { inside = 0 } inside && /^export /' \
    "$top_srcdir/docs/quickstart.md")
[ -n "$setup" ] || { echo "$test_name: docs/quickstart.md has no export lines" >&2; exit 99; }
if [ -n "$as_user" ] || [ "$(id -u)" -ne 0 ]; then
    setup=$(echo "$setup" | grep -v 'only as root')
fi
echo "set-up (docs/quickstart.md):"
echo "$setup"
(cd "$top" && eval "$setup" && env) | grep -E '^(PATH|DOCS|OMPI_[A-Z_]*)=' >"$tmp/env" || exit 99
while IFS= read -r line; do
    # shellcheck disable=SC2163 # export NAME=VALUE as read
    export "$line"
done <"$tmp/env"

# mask_paths FILE: the docs folder's path as $DOCS, the scratch directory as TMP
mask_paths() {
    sed -e "s|$DOCS|\$DOCS|g" -e "s|$tmp|TMP|g" "$1"
}

# mask FILE: the fields that vary between runs, replaced by a fixed word. Applied
# to the page's block and the real output alike.
mask() {
    mask_paths "$1" | sed -E \
        -e 's/[0-9]+(\.[0-9]+)? tok\/s/# tok\/s/g' \
        -e 's/[0-9]+(\.[0-9]+)? ms\b/# ms/g' \
        -e 's/ in [0-9]+(\.[0-9]+)? s\b/ in # s/g' \
        -e 's/, id [^ ]+/, id #/' \
        -e 's/^(  [a-z_-]+( [a-z_]+)? +[0-9]+ +[0-9.]+ +[0-9.]+) +[0-9]+\.[0-9]+$/\1 #/' \
        -e 's/^(libzero: NVMe offload: .* bytes\)), .*, (chunks of )/\1, #, \2/' \
        -e 's/[ \t]+$//'
}

# mpirun as the pages call it: a function (the pages' commands are eval'ed), kept as
# text for the user mode's shell
# shellcheck disable=SC2016 # expanded when eval'ed
mpirun_def='mpirun() {
    np=0
    prev=
    for arg in "$@"; do
        [ "$prev" = -np ] && np=$arg
        prev=$arg
    done
    extra=
    case " $* " in *" --oversubscribe "*) ;; *) [ "$np" -gt "$cores" ] && extra=--oversubscribe ;; esac
    command "$mpirun_cmd" $transport_flags $extra "$@"
}'
eval "$mpirun_def"

# run_cmd DIR CMD: CMD's output (stdout and stderr) in $tmp/got, its status in $rc
run_cmd() {
    if [ -n "$as_user" ]; then
        # a fresh shell as the user, with the set-up's environment and the same mpirun
        {
            echo "cd '$1' || exit 99"
            echo "export PATH='$PATH' DOCS='$DOCS' OPENBLAS_NUM_THREADS=1"
            # the test environment's sanitizer options (suppressions), where set
            for var in ASAN_OPTIONS LSAN_OPTIONS UBSAN_OPTIONS OMP_NUM_THREADS; do
                eval "value=\${$var-}"
                [ -n "$value" ] && echo "export $var='$value'"
            done
            echo "cores=$cores mpirun_cmd='$mpirun_cmd' transport_flags='$transport_flags'"
            printf '%s\n' "$mpirun_def"
            printf '%s\n' "$2"
        } >"$tmp/as_user.sh"
        runuser -u "$as_user" -- env -i HOME=/tmp LANG="${LANG:-C.UTF-8}" sh "$tmp/as_user.sh" >"$tmp/got" 2>&1
        rc=$?
    else
        (cd "$1" && eval "$2") >"$tmp/got" 2>&1
        rc=$?
    fi
}

# run_retrying DIR CMD: run_cmd, again (up to 3 times in all) where Open MPI's
# end-of-job race failed it
run_retrying() {
    run_cmd "$1" "$2"
    tries=1
    while [ "$rc" -ne 0 ] && [ "$tries" -lt 3 ] && ompi_exit_race "$tmp/got"; do
        echo "'$2': Open MPI's end-of-job race (tests/ompi_exit_race.sh): once more"
        run_cmd "$1" "$2"
        tries=$((tries + 1))
    done
}

# split_page PAGE: $tmp/page/N.cmd (one command), N.want (its shown output), N.at
# (the line of the command in the page, how many output lines follow it, and the
# block's indentation: a block in a list item is indented)
split_page() {
    rm -rf "$tmp/page"
    mkdir "$tmp/page"
    awk -v dir="$tmp/page" '
        function close_cmd() {
            if (n > 0 && !closed) { print at " " lines " " length(indent) > (dir "/" n ".at"); close(dir "/" n ".at") }
            closed = 1
        }
        !inside && /^ *```console[ \t]*$/ { inside = 1; indent = $0; sub(/```.*/, "", indent); next }
        inside && /^ *```/ { inside = 0; close_cmd(); next }
        inside {
            line = $0
            if (substr(line, 1, length(indent)) == indent) line = substr(line, length(indent) + 1)
        }
        inside && line ~ /^\$ / {
            close_cmd(); n++; at = NR; lines = 0; closed = 0
            print substr(line, 3) > (dir "/" n ".cmd"); close(dir "/" n ".cmd")
            printf "" > (dir "/" n ".want"); next
        }
        inside && n > 0 { lines++; print line >> (dir "/" n ".want") }
        END { print n + 0 > (dir "/count") }
    ' "$1"
}

# replace_block PAGE AT LINES INDENT FILE: the LINES lines after line AT become
# FILE, indented by INDENT spaces
replace_block() {
    awk -v at="$2" -v lines="$3" -v indent="$4" -v file="$5" '
        BEGIN { pad = sprintf("%" indent "s", "") }
        NR == at { print; while ((getline l < file) > 0) print (l == "" ? "" : pad l); next }
        NR > at && NR <= at + lines { next }
        { print }
    ' "$1" >"$1.new" && mv "$1.new" "$1"
}

commands=0
blocks=0
skipped=0
if [ -n "$pages" ]; then
    list=
    for p in $pages; do
        case $p in README.md) list="$list $top_srcdir/README.md" ;; *) list="$list $top_srcdir/docs/$p" ;; esac
    done
else
    list="$top_srcdir/README.md $top_srcdir/docs/*.md"
fi
mkdir "$tmp/out"
for page in $list; do
    name=$(basename "$page")
    [ "$page" = "$top_srcdir/README.md" ] && name=README.md
    split_page "$page"
    count=$(cat "$tmp/page/count")
    [ "$count" -gt 0 ] || continue
    if [ "$name" = README.md ]; then
        work=$top
    else
        work=$tmp/work.${name%.md}
        mkdir -p "$work"
    fi
    [ -n "$as_user" ] && chown "$as_user" "$work"
    updates=
    i=1
    while [ "$i" -le "$count" ]; do
        cmd=$(cat "$tmp/page/$i.cmd")
        prog=${cmd%% *}
        np=$(echo "$cmd" | sed -n 's/.*-np \([0-9]*\).*/\1/p')
        if [ -n "$np" ] && [ "$np" -gt 2 ] && ! echo "$cmd" | grep -q -- '--oversubscribe'; then
            fail "$name: '$cmd': $np ranks on the pages' two-core machine need --oversubscribe"
        fi
        if [ -n "$as_user" ] && ! runuser -u "$as_user" -- env PATH="$PATH" sh -c "command -v $prog" >/dev/null 2>&1 &&
            [ "$prog" != mpirun ]; then
            echo "skip ($prog not found as $as_user): $name: $cmd"
            skipped=$((skipped + 1))
            i=$((i + 1))
            continue
        fi
        if ! command -v "$prog" >/dev/null 2>&1 && ! (cd "$work" && test -x "$prog"); then
            echo "skip ($prog not found): $name: $cmd"
            skipped=$((skipped + 1))
            i=$((i + 1))
            continue
        fi
        commands=$((commands + 1))
        [ -s "$tmp/page/$i.want" ] && blocks=$((blocks + 1))
        started=$(date +%s)
        run_retrying "$work" "$cmd"
        echo "$name: $(($(date +%s) - started)) s: $cmd"
        [ "$rc" -ne 0 ] && echo "[exit $rc]" >>"$tmp/got"
        cp "$tmp/got" "$tmp/out/$name.$i.out"
        cp "$tmp/page/$i.cmd" "$tmp/out/$name.$i.cmd"
        mask "$tmp/page/$i.want" >"$tmp/want.masked"
        mask "$tmp/got" >"$tmp/got.masked"
        # trailing empty lines do not count (a block cannot show them)
        for f in "$tmp/want.masked" "$tmp/got.masked"; do
            sed -e ':a' -e '/^\n*$/{$d;N;ba' -e '}' "$f" >"$f.t" && mv "$f.t" "$f"
        done
        if ! diff -u "$tmp/want.masked" "$tmp/got.masked" >"$tmp/diff"; then
            fail "$name: '$cmd' (page line $(cut -d' ' -f1 "$tmp/page/$i.at")): the output differs from the page (- page, + real, after the mask):"
            sed 1,2d "$tmp/diff"
            if [ "$update" = 1 ]; then
                mask_paths "$tmp/got" | sed -e 's/[ \t]*$//' -e ':a' -e '/^\n*$/{$d;N;ba' -e '}' >"$tmp/out/$name.$i.new"
                updates="$i $updates"
            fi
        fi
        i=$((i + 1))
    done
    # from the last block to the first, so that the line numbers stay right
    for i in $updates; do
        # shellcheck disable=SC2046 # AT LINES INDENT
        replace_block "$page" $(cat "$tmp/page/$i.at") "$tmp/out/$name.$i.new"
        echo "updated $name: the output of '$(cat "$tmp/page/$i.cmd")'"
    done
done

# ---------------------------------------------------------------- the exercises
# answer PAGE N: the text of exercise N of PAGE (docs/), one line
answer() {
    awk -v n="$2" '
        /^## Exercises/ { inside = 1; next }
        inside && /^## / { inside = 0 }
        inside && /^[0-9]+\. / { cur = $1 + 0 }
        inside && cur == n { sub(/^ +/, ""); printf "%s ", $0 }
    ' "$top_srcdir/docs/$1"
}

# output_of PAGE CMD-PATTERN: the file with the real output of the page's first
# command that matches the extended regular expression (fails if none ran)
output_of() {
    for f in "$tmp/out/$1".*.cmd; do
        if [ -f "$f" ] && grep -Eq -- "$2" "$f"; then
            echo "${f%.cmd}.out"
            return 0
        fi
    done
    echo "$tmp/none"
    return 1
}

# run_answer CMD: runs a command an answer names, in a scratch directory, as the
# pages' commands run; its output in $tmp/got
run_answer() {
    mkdir -p "$tmp/work.answers"
    [ -n "$as_user" ] && chown "$as_user" "$tmp/work.answers"
    run_retrying "$tmp/work.answers" "$1"
}

# check_number WHAT PAGE-VALUE REAL-VALUE
answers=0
check_number() {
    answers=$((answers + 1))
    if [ "$2" != "$3" ]; then
        fail "exercise answer: $1: the page says '$2', the program or formula gives '$3'"
    fi
}

# sums TEXT: each "a + b + ... = c" of TEXT (parenthesized words dropped) as
# "a + b = c|sum" lines
sums() {
    echo "$1" | sed -e 's/ ([^)]*)//g' | grep -Eo '[0-9]+( \+ [0-9]+)+ = [0-9]+' |
        awk -F' = ' '{ n = split($1, t, / \+ /); s = 0; for (i = 1; i <= n; i++) s += t[i]; print $2 "|" s }'
}

# drop the thousands' commas of a number
plain() {
    echo "$1" | tr -d ,
}

exercises() {
    # memory.md 1: the estimate the answer names, and which stages fit in 16 GB
    a=$(answer memory.md 1)
    # shellcheck disable=SC2016 # backquotes of the markdown
    cmd=$(echo "$a" | sed -n 's/.*Answer:\* `\([^`]*\)`.*/\1/p')
    run_answer "$cmd"
    real=$(awk '/^[0-3] / { printf "%s%s", sep, $(NF - 1); sep = ", " }' "$tmp/got")
    check_number "memory.md 1, GB per stage" "$(echo "$a" | sed -n 's/.*`: \([0-9., ]*\) GB.*/\1/p')" "$real"
    fit=$(awk '/^[0-3] / && $(NF - 1) < 16 { s = s ? s : $1; e = $1 } END { print s "-" e }' "$tmp/got")
    check_number "memory.md 1, stages that fit" "$(echo "$a" | sed -n 's/.*GB: stages \([0-9-]*\).*/\1/p')" "$fit"

    # memory.md 2 and 3: the zero memory table on the page (4 ranks)
    out=$(output_of memory.md 'zero memory')
    psi=$(sed -n 's/.*parameters, \([0-9,]*\) elements padded.*/\1/p' "$out")
    # col ROW STAGE: that cell of the table, without commas
    col() { awk -v row="$1" -v c="$2" '$1 == row { gsub(/,/, "", $(c + 2)); print $(c + 2) }' "$out"; }
    a=$(answer memory.md 2)
    check_number "memory.md 2, bytes of Adam per parameter (stage 1 optim x N / Ψ)" \
        "$(echo "$a" | sed -n "s/.*Adam's \([0-9]*\) bytes.*/\1/p")" \
        "$(($(col optim 1) * 4 / $(plain "$psi")))"
    check_number "memory.md 2, bytes of parameters and gradients (stage 1, / Ψ)" \
        "$(echo "$a" | sed -n 's/.*gradients (\([0-9]*\) bytes).*/\1/p')" \
        "$((($(col params 1) + $(col grads 1)) / $(plain "$psi")))"
    a=$(answer memory.md 3)
    check_number "memory.md 3, stage 3's params row" \
        "$(echo "$a" | sed -n 's/.*params row reads \([0-9,]*\) bytes.*/\1/p')" \
        "$(col params 3 | sed -e ':a' -e 's/\([0-9]\)\([0-9]\{3\}\)\($\|,\)/\1,\2\3/' -e 'ta')"
    check_number "memory.md 3, Ψ" "$(echo "$a" | sed -n 's/.*Ψ is \([0-9,]*\) padded.*/\1/p')" "$psi"

    # memory.md 4: the byte sums, and DeepSpeed's 18Ψ/T against the estimator
    a=$(answer memory.md 4)
    for s in $(sums "$a" | tr ' ' '_'); do
        check_number "memory.md 4, a sum" "${s%%|*}" "${s##*|}"
    done
    check_number "memory.md 4, DeepSpeed's bytes per partitioned parameter" \
        "$(echo "$a" | sed -n 's/.*is 4L + \([0-9]*\)Ψ\/T.*/\1/p')" \
        "$(sums "$a" | sed -n 1p | cut -d'|' -f2)"
    check_number "memory.md 4, the extra bytes" "$(echo "$a" | sed -n 's/.*the extra \([0-9]*\)Ψ\/T.*/\1/p')" \
        "$(($(sums "$a" | sed -n 1p | cut -d'|' -f2) - $(sums "$a" | sed -n 2p | cut -d'|' -f2)))"
    out=$(output_of memory.md 'largest-layer 32e6')
    check_number "memory.md 4, 4L + 18Ψ/T GB (2851M, 32M, 8 GPUs) against --deepspeed" \
        "$(awk 'BEGIN { printf "%.2fGB", (4 * 32e6 + int(18 * 2851e6 / 8)) / 2^30 }')" \
        "$(awk '/offload_param=none, offload_optimizer=none, zero_init=1/ { print $3 }' "$out")"

    # stages.md 1: an all-reduce of E = 2,176 elements on 2 ranks
    a=$(answer stages.md 1)
    out=$(output_of stages.md 'stage 0 ')
    e=$(plain "$(echo "$a" | sed -n 's/.*unit of \([0-9,]*\) elements.*/\1/p')")
    check_number "stages.md 1, what the stage-0 schedule sends for layers.1" \
        "$(echo "$a" | sed -n 's/.*send \([0-9,]*\) elements.*/\1/p')" \
        "$(sed -n 's/.*reduce  *layers\.1  *\([0-9,]*\)  *all_reduce.*sends \([0-9,]*\)$/\2/p' "$out")"
    check_number "stages.md 1, E(N-1)/N" "$(plain "$(echo "$a" | sed -n 's/.*E(N-1)\/N = \([0-9,]*\).*/\1/p')")" \
        "$((e / 2))"

    # stages.md 2: the 3-rank schedule the exercise names
    a=$(answer stages.md 2)
    # shellcheck disable=SC2016 # backquotes of the markdown
    cmd=$(echo "$a" | sed -n 's/^2\. Run `\([^`]*\)`.*/\1/p')
    run_answer "$cmd"
    check_number "stages.md 2, the theory line" \
        "$(echo "$a" | sed -n 's/.*Answer:\* \(.*\) elements: Ψ.*/\1/p')" \
        "$(sed -n 's/^theory: .*(N-1)\/N = \(.*\) elements .*/\1/p' "$tmp/got")"
    check_number "stages.md 2, Ψ on 3 ranks" "$(echo "$a" | sed -n 's/.*: Ψ = \([0-9,]*\) because.*/\1/p')" \
        "$(sed -n 's/.*parameters, \([0-9,]*\) elements padded.*/\1/p' "$tmp/got")"
    check_number "stages.md 2, Ψ on 2 ranks" "$(echo "$a" | sed -n 's/.*(\([0-9,]*\) on 2 ranks).*/\1/p')" \
        "$(sed -n 's/.*parameters, \([0-9,]*\) elements padded.*/\1/p' "$(output_of stages.md 'stage 0 ')")"
    check_number "stages.md 2, Ψr (the classifier on 3 ranks)" "$(echo "$a" | sed -n 's/.*Ψr = \([0-9,]*\) is the classifier.*/\1/p')" \
        "$(awk '($4 == "gather" || $4 == "prefetch") && $5 == "classifier" { print $6; exit }' "$tmp/got")"

    # stages.md 3: a unit that stays gathered from its forward to its backward saves
    # its backward gather, Ψr; all of them (the page's run with DeepSpeed's reuse
    # distance, every unit kept) give (3Ψ - Ψ)(N-1)/N = 2Ψ(N-1)/N, stage 2's volume
    a=$(answer stages.md 3)
    check_number "stages.md 3, the volume with Ψr = Ψ" "$(echo "$a" | sed -n 's/.*sends \((3Ψ - Ψ)(N-1)\/N = 2Ψ(N-1)\/N\).*/\1/p')" \
        "(3Ψ - Ψ)(N-1)/N = 2Ψ(N-1)/N"
    out=$(output_of stages.md '--persistence 0$')
    check_number "stages.md 3, the page's run with every unit kept: (3Ψ - Ψr) x 1/2 = 2Ψ x 1/2" "$(
        sed -n 's/^theory: .* = (3 x \([0-9,]*\) - 0 - \([0-9,]*\)) x 1\/2 = \([0-9,]*\) elements .*/\1 \2 \3/p' "$out" | tr -d , |
            awk '{ print ($1 == $2 && (3 * $1 - $2) / 2 == $3 && $3 == 2 * $1 / 2) ? "yes" : "no" }')" yes

    # exactness.md 1: a global batch of 6 from micro-batches of 2 on 2 ranks
    a=$(answer exactness.md 1)
    run_answer "mpirun -np 2 zero verify --worlds 2,1 --micro-batch 2 --batch 6 --hidden 16 --layers 2 --align 64"
    check_number "exactness.md 1, it refuses" "refuses" "$([ "$rc" -ne 0 ] && echo refuses)"
    check_number "exactness.md 1, the accumulation" "$(echo "$a" | sed -n 's/.*needs accumulation \([0-9.]*\) on.*/\1/p')" \
        "$(awk 'BEGIN { print 6 / (2 * 2) }')"

    # exactness.md 2: stage 0 perturbed: all the others differ, first at element 0
    a=$(answer exactness.md 2)
    run_answer "mpirun -np 2 zero verify --hidden 16 --layers 2 --align 64 --steps 4 --perturb 0:2"
    check_number "exactness.md 2, configurations that differ" "3 of 3" \
        "$(sed -n 's/^\([0-9]* of [0-9]*\) configurations differ.*/\1/p' "$tmp/got")"
    check_number "exactness.md 2, the first element named" "$(echo "$a" | sed -n 's/.*tensor, element \([0-9]*\).*/\1/p')" \
        "$(sed -n 's/.*differs from.*, element \([0-9]*\) .*/\1/p' "$tmp/got" | sort -u | paste -sd' ')"
}

# (they read the real output of memory.md's and stages.md's commands)
if [ -z "$pages" ] || [ "$exercises" = 1 ]; then
    exercises
fi

# The quickstart's package list is quickstart.sh's
want=$(sed -n '/^packages=(/,/)/p' "$top_srcdir/quickstart.sh" | sed -e 's/#.*//' -e 's/packages=(//' -e 's/)//' | tr -s ' \n' '\n' | grep . | sort)
got=$(sed -n '/^It installs these Debian packages/,/;/p' "$top_srcdir/docs/quickstart.md" | sed -e 's/.*missing: //' -e 's/;.*//' | tr -s ' ,\n' '\n' | grep . | sort)
if [ -z "$pages" ] && [ "$want" != "$got" ]; then
    fail "docs/quickstart.md's package list is not quickstart.sh's: $(echo "$want" | paste -sd' ') vs $(echo "$got" | paste -sd' ')"
fi

echo "$commands commands run ($blocks with an output block compared whole), $skipped skipped; $answers exercise numbers checked; $failures failed"
[ "$commands" -gt 0 ] || exit 99
[ "$failures" -eq 0 ]
