# shellcheck shell=sh
# lib.sh -- what the shell tests (tests/test_*.sh) share: where the build and the
# sources are, how ranks are launched, a scratch directory, and helpers that run a
# program, check its exit status and output, and count failures. POSIX sh; each
# test sources it from its own directory:
#
#     . "${ZERO_TEST_SRCDIR:-$(dirname "$0")}/lib.sh"
#
# (ZERO_TEST_SRCDIR is the source tests/ folder under `make check' and distcheck;
# by hand, $0 is the script's path.) Afterwards the test has:
#   $test_name      the script's name without .sh, for its messages
#   $top_builddir   top build directory (the programs)
#   $top_srcdir     top source directory (examples/configs, docs, tests/configs)
#   $tmp            a scratch directory, removed when the test exits
#   $failures       the number of fail calls so far
#   $rc             the exit status of the last run

set -u

test_name=$(basename "$0" .sh)
# Set by AM_TESTS_ENVIRONMENT to the tests/ folders; by hand the test runs from the
# top build directory.
# shellcheck disable=SC2034 # used by the tests
top_builddir=$(cd "${ZERO_TEST_BUILDDIR:-tests}/.." && pwd)
# shellcheck disable=SC2034
top_srcdir=$(cd "${ZERO_TEST_SRCDIR:-$(dirname "$0")}/.." && pwd)

# The launcher and flags of tests/mpirun-wrapper, so that a test run by hand
# launches its ranks as `make check' does.
mpirun_cmd=${ZERO_MPIRUN:-${MPIRUN:-mpirun}}
default_flags="--allow-run-as-root --oversubscribe --bind-to none"
default_flags="$default_flags --mca pml ob1 --mca btl self,vader"
mpirun_flags=${ZERO_MPIRUN_FLAGS-$default_flags}
# Open MPI refuses to run as root without these (harmless elsewhere); one BLAS
# thread per rank, as AM_TESTS_ENVIRONMENT sets it.
OMPI_ALLOW_RUN_AS_ROOT=${OMPI_ALLOW_RUN_AS_ROOT:-1}
OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=${OMPI_ALLOW_RUN_AS_ROOT_CONFIRM:-1}
OPENBLAS_NUM_THREADS=1
export OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM OPENBLAS_NUM_THREADS

tmp=$(mktemp -d "${TMPDIR:-/tmp}/$test_name.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
failures=0
rc=0

# under_sanitizers: true in a build configured with --enable-sanitizers
# (AM_TESTS_ENVIRONMENT passes its SANITIZER_CFLAGS as ZERO_TEST_SANITIZERS), where
# a test whose claim is about bits or text, which the default build checks, skips
# or runs a smaller sweep
under_sanitizers() {
    case ${ZERO_TEST_SANITIZERS:-} in
        *sanitize*) return 0 ;;
    esac
    return 1
}

# small_sweep: true in the suites that repeat the default build's (the sanitizer
# build and distcheck, for which quickstart.sh sets ZERO_TEST_WORLD_SIZES), where a
# test whose sweep is about bits or learning, which the default build checks in
# full, walks each code path once: a few cases, fewer steps
small_sweep() {
    under_sanitizers || [ -n "${ZERO_TEST_WORLD_SIZES:-}" ]
}

# libraries_kb PROG: the kilobytes of the shared libraries PROG (a libtool wrapper or a
# program) maps, their files' sizes summed; a test under `ulimit -v N` gives
# N + this, so that a CUDA build's libraries (cuBLASLt and NCCL: 0.8 GB) still load
libraries_kb() {
    bin=$(dirname "$1")/.libs/$(basename "$1")
    [ -x "$bin" ] || bin=$1
    LD_LIBRARY_PATH="$top_builddir/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ldd "$bin" 2>/dev/null |
        awk '$3 ~ /^\// {print $3}' | xargs -r stat -L -c %s 2>/dev/null |
        awk '{s += $1} END {print int(s / 1024)}'
}

# require_built PROG...: exit 99 (a hard error, not a failed check) unless every
# PROG is built.
require_built() {
    for prog in "$@"; do
        if [ ! -x "$prog" ]; then
            echo "$test_name: $prog is not built" >&2
            exit 99
        fi
    done
}

# mpirun_with_flags ARGS...: the launcher with the suite's flags. `command' so
# that a test may define a function named mpirun on top of this one.
# shellcheck source=SCRIPTDIR/ompi_exit_race.sh
. "${ZERO_TEST_SRCDIR:-$(dirname "$0")}/ompi_exit_race.sh"

mpirun_with_flags() {
    # shellcheck disable=SC2086 # $mpirun_flags is a list of words
    command "$mpirun_cmd" $mpirun_flags "$@"
}

# run NAME NP PROG ARGS...: PROG's output in $tmp/NAME.out and .err, its exit
# status in $rc. NP 0 runs PROG directly, a one-rank MPI singleton: mpirun takes
# seconds to wind down a job that failed, so error checks mostly run this way.
run() {
    name=$1
    np=$2
    shift 2
    if [ "$np" -eq 0 ]; then
        "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
        rc=$?
    else
        mpirun_with_flags -np "$np" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
        rc=$?
        if [ "$rc" -ne 0 ] && ompi_exit_race "$tmp/$name.err"; then
            echo "$test_name: $name: Open MPI's end-of-job race (tests/ompi_exit_race.sh): once more"
            mpirun_with_flags -np "$np" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
            rc=$?
        fi
    fi
}

# fail MESSAGE...: report one failed check and count it; the test goes on.
fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}

# show NAME: the output of run NAME, for a failure's context
show() {
    echo "---- $1: stdout"
    cat "$tmp/$1.out"
    echo "---- $1: stderr"
    cat "$tmp/$1.err"
}

# expect_rc NAME RC: run NAME exited RC; returns 1 (after failing) if not, so
# that the checks of its output can be skipped
expect_rc() {
    if [ "$rc" -ne "$2" ]; then
        fail "$1 exited $rc, expected $2"
        show "$1"
        return 1
    fi
    return 0
}

# expect_ok NAME: run NAME exited 0
expect_ok() {
    expect_rc "$1" 0
}

# expect_error NAME RC PATTERN: run NAME exited RC and its stderr matches the
# basic regular expression PATTERN
expect_error() {
    if [ "$rc" -ne "$2" ]; then
        fail "$1 exited $rc, expected $2"
        show "$1"
    elif ! grep -q -- "$3" "$tmp/$1.err"; then
        fail "$1: stderr does not mention '$3'"
        show "$1"
    fi
}

# expect_line NAME out|err TEXT: a line of run NAME's stdout or stderr, runs of
# spaces squeezed to one, equals TEXT
expect_line() {
    if ! tr -s ' ' <"$tmp/$1.$2" | grep -qxF -- "$3"; then
        fail "$1: no line '$3' in its $2"
        cat "$tmp/$1.$2"
    fi
}

# expect_text NAME out|err TEXT: run NAME's stdout or stderr contains TEXT
expect_text() {
    if ! grep -qF -- "$3" "$tmp/$1.$2"; then
        fail "$1: no '$3' in its $2"
        cat "$tmp/$1.$2"
    fi
}

# finish MESSAGE: the test's verdict: exit 1 after the count of failures, else
# print MESSAGE and exit 0.
finish() {
    if [ "$failures" -ne 0 ]; then
        echo "$test_name: $failures failure(s)"
        exit 1
    fi
    echo "$1"
    exit 0
}
