#!/usr/bin/env bash
# quickstart.sh -- set up, build and run libzero on a Debian/Ubuntu machine.
#
#   ./quickstart.sh         install missing packages (apt-get), generate the build
#                           system, configure and build in build/, run the main job
#   ./quickstart.sh check   same set-up, then `make check' in build/, a second build
#                           with --enable-sanitizers in build-asan/ and its
#                           `make check', then `make distcheck' in build/; those
#                           two repeat the multi-rank tests at fewer world sizes
#                           (ZERO_TEST_WORLD_SIZES, tests/mpirun-wrapper)
#   ./quickstart.sh fuzz    install clang too, build the libFuzzer targets in
#                           build-fuzz/ (OMPI_CC=clang, --enable-fuzzing) and run
#                           `make fuzz-smoke' (each target FUZZ_SECONDS, 30 s,
#                           JOBS targets at a time)
#
# Both builds are VPATH builds; the source tree itself is never configured.
# Environment:
#   ZERO_NO_CUDA=1          do not configure the CUDA backend even if nvcc is present
#   ZERO_DISTCHECK=1        also run `make distcheck' in the default mode
#   ZERO_CONFIGURE_FLAGS    extra flags for ./configure (both builds)
#   JOBS                    parallel make jobs (default: nproc)
#   FUZZ_SECONDS            seconds per fuzz target in fuzz mode (default 30)
#   SECOND_WORLD_SIZES      world sizes of the sanitizer suite (3)
#   DISTCHECK_WORLD_SIZES   world sizes of distcheck's suite (1: every test once)
set -euo pipefail

cd "$(dirname "$0")"
srcdir=$(pwd)

usage() {
    sed -n '2,24s/^# \{0,1\}//p' "$0"
}

mode=${1:-run}
case $mode in
    run | check | fuzz) ;;
    -h | --help)
        usage
        exit 0
        ;;
    *)
        usage >&2
        exit 2
        ;;
esac

jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}
read -r -a extra_configure_flags <<<"${ZERO_CONFIGURE_FLAGS:-}"

# each phase with the seconds since the script started, so a slow CI run shows where
phase() {
    printf '\n==> [%d s] %s\n' "$SECONDS" "$*"
}

die() {
    printf 'quickstart.sh: error: %s\n' "$*" >&2
    exit 1
}

# ------------------------------------------------------------------ packages
packages=(build-essential autoconf automake libtool pkg-config libopenmpi-dev openmpi-bin
    libopenblas-dev check libjansson-dev libsubunit-dev liburing-dev libpcre2-dev libutf8proc-dev
    iproute2) # iproute2: ip netns for tests/test_multihost.sh
# fuzz mode: clang brings libFuzzer (libclang-rt-14-dev on Debian 12); clang-format for
# .ci/run's format check
if [ "$mode" = fuzz ]; then
    packages+=(clang clang-format)
fi

install_packages() {
    phase "Checking system packages"
    if ! command -v dpkg-query >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1; then
        echo "not a Debian/Ubuntu system: make sure the equivalents of these are installed:"
        echo "  ${packages[*]}"
        return 0
    fi
    local missing=() p
    for p in "${packages[@]}"; do
        if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
            missing+=("$p")
        fi
    done
    if ((${#missing[@]} == 0)); then
        echo "all required packages are installed"
        return 0
    fi
    echo "installing: ${missing[*]}"
    local sudo=()
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null 2>&1 || die "not root and no sudo: install ${missing[*]} by hand"
        sudo=(sudo)
    fi
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"
}

# ------------------------------------------------------------------ CUDA detection
cuda_flags=()
detect_cuda() {
    if [ "${ZERO_NO_CUDA:-0}" = 1 ]; then
        echo "CUDA: disabled (ZERO_NO_CUDA=1)"
        return 0
    fi
    local nvcc cuda_home d
    nvcc=$(command -v nvcc 2>/dev/null || true)
    if [ -z "$nvcc" ] && [ -x /usr/local/cuda/bin/nvcc ]; then
        nvcc=/usr/local/cuda/bin/nvcc
    fi
    if [ -z "$nvcc" ]; then
        echo "CUDA: no nvcc found, building the CPU backend only"
        return 0
    fi
    cuda_home=$(dirname "$(dirname "$nvcc")")
    if [ -x /usr/local/cuda/bin/nvcc ]; then
        cuda_home=/usr/local/cuda
    fi
    for d in "$cuda_home" /usr/local/cuda /usr; do
        if [ -f "$d/include/nccl.h" ]; then
            cuda_flags=(--with-cuda="$cuda_home" --with-nccl)
            echo "CUDA: nvcc at $nvcc, nccl.h in $d/include: ${cuda_flags[*]}"
            return 0
        fi
    done
    cuda_flags=(--with-cuda="$cuda_home")
    echo "CUDA: nvcc at $nvcc, no nccl.h found: ${cuda_flags[*]}"
}

# ------------------------------------------------------------------ build
generate() {
    phase "Generating the build system (autoreconf -fi)"
    if [ -f "$srcdir/config.status" ]; then
        # An in-tree configuration blocks VPATH builds.
        echo "the source tree was configured in place; cleaning it (make distclean)"
        make -C "$srcdir" distclean >/dev/null 2>&1 || rm -f "$srcdir/config.status"
    fi
    autoreconf -fi
}

configure_in() {
    local dir=$1
    shift
    phase "Configuring in $dir/ (configure $*)"
    mkdir -p "$dir"
    (cd "$dir" && "$srcdir/configure" "$@")
}

build_in() {
    local dir=$1
    phase "Building in $dir/ (make -j$jobs)"
    make -C "$dir" -j"$jobs"
}

# Print the test-suite totals, on failure with every failed test's log.
check_in() {
    local dir=$1 start=$SECONDS
    phase "Running the test suite in $dir/ (make check)"
    if ! make -C "$dir" -j"$jobs" check; then
        if [ -f "$dir/test-suite.log" ]; then
            phase "Failed tests ($dir/test-suite.log)"
            cat "$dir/test-suite.log"
        fi
        die "make check failed in $dir/"
    fi
    echo "$dir: $(summary_line "$dir/test-suite.log") ($((SECONDS - start)) s)"
    echo "$dir: slowest tests:"
    slowest_tests "$dir"
}

# The ten longest tests of a make check in $1 (the wrapper's last log line). sed reads
# to the end where head would close the pipe early: sort's SIGPIPE, under pipefail and
# set -e, ended CI after a passing suite (exit 141).
slowest_tests() {
    find "$1/tests" -name '*.log' -exec sed -n "s/^mpirun-wrapper: '\(.*\)' took \([0-9]*\) s$/\2 \1/p" {} + |
        sort -rn | sed -n 's/^/    /; 1,10p'
}

summary_line() {
    sed -n 's/^# \(TOTAL\|PASS\|SKIP\|XFAIL\|FAIL\|XPASS\|ERROR\): *\([0-9]*\)$/\1 \2/p' "$1" |
        paste -sd ',' - | sed 's/,/, /g'
}

# Every file git tracks is in the tarball, except CI's own and git's: a header left out
# of noinst_HEADERS breaks the tarball's build, a page left out of EXTRA_DIST a link.
dist_complete() {
    local tarball missing
    tarball=$(ls "$1"/libzero-*.tar.gz 2>/dev/null | sed -n 1p)
    if [ -z "$tarball" ] || ! git -C "$srcdir" rev-parse --git-dir >/dev/null 2>&1; then
        return 0
    fi
    missing=$(comm -23 <(git -C "$srcdir" ls-files | grep -v -E '^(\.ci/|\.gitignore$)' | sort) \
        <(tar tzf "$tarball" | sed 's|^[^/]*/||' | sort))
    if [ -n "$missing" ]; then
        echo "$missing" | sed 's/^/  not in the tarball: /'
        die "add these files to EXTRA_DIST, a _SOURCES or a _HEADERS list"
    fi
    echo "the tarball holds every tracked file"
}

distcheck_in() {
    local dir=$1 start=$SECONDS log
    phase "make distcheck in $dir/"
    log=$(mktemp)
    if ! make -C "$dir" -j"$jobs" distcheck 2>&1 | tee "$log"; then
        rm -f "$log"
        die "make distcheck failed"
    fi
    grep -A1 -E 'archives? ready for distribution' "$log" | paste -sd ' ' - || true
    rm -f "$log"
    dist_complete "$dir"
    echo "distcheck took $((SECONDS - start)) s"
}

# ------------------------------------------------------------------ main job
mpirun_cmd=()
set_mpirun() {
    local mpirun flags
    mpirun=$(sed -n 's/^MPIRUN = //p' build/Makefile)
    flags=$(sed -n 's/^MPIRUN_FLAGS = //p' build/Makefile)
    read -r -a mpirun_cmd <<<"${mpirun:-mpirun} $flags"
    export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
}

main_job() {
    set_mpirun
    if [ -x build/examples/train_gpt ]; then
        phase "Main job: a GPT learns addition with ZeRO stage 3 on 2 ranks (examples/train_gpt)"
        "${mpirun_cmd[@]}" -np 2 build/examples/train_gpt --stage 3 --persistence 0 --memory-table
    elif [ -x build/examples/train_mlp ]; then
        phase "Main job: ZeRO stage 3 on 2 ranks (examples/train_mlp)"
        "${mpirun_cmd[@]}" -np 2 build/examples/train_mlp --stage 3 --hidden 256 --layers 4 --steps 30 --lr 1e-3
    elif [ -x build/src/cli/zero ]; then
        phase "Main job: collective self-test on 2 ranks (zero selftest)"
        "${mpirun_cmd[@]}" -np 2 build/src/cli/zero selftest
    else
        phase "Build done (no examples/train_mlp or src/cli/zero yet; libzero is in build/.libs)"
    fi
}

# ------------------------------------------------------------------ run
install_packages
phase "Looking for CUDA"
detect_cuda
generate
if [ "$mode" = fuzz ]; then
    phase "Configuring in build-fuzz/ (OMPI_CC=clang configure --enable-fuzzing)"
    mkdir -p build-fuzz
    (cd build-fuzz && OMPI_CC=clang "$srcdir/configure" --enable-fuzzing --without-cuda \
        --without-nccl "${extra_configure_flags[@]}")
    build_in build-fuzz
    phase "Fuzzing every reader and parser (make fuzz-smoke, ${FUZZ_SECONDS:-30} s each)"
    FUZZ_JOBS=$jobs make -C build-fuzz fuzz-smoke FUZZ_SECONDS="${FUZZ_SECONDS:-30}"
    phase "quickstart.sh fuzz: all done"
    exit 0
fi
configure_in build "${cuda_flags[@]}" "${extra_configure_flags[@]}"
build_in build

if [ "$mode" = run ]; then
    main_job
    if [ "${ZERO_DISTCHECK:-0}" = 1 ]; then
        distcheck_in build
    fi
else
    # build-asan/ compiles while build/'s suite runs: the suite mostly waits (mpirun's
    # start-up, fsync), about one of two cores busy; its output is shown after
    mkdir -p build-asan
    phase "Configuring and building build-asan/ during build/'s suite (log: build-asan/quickstart.log)"
    (configure_in build-asan --enable-sanitizers "${extra_configure_flags[@]}" &&
        build_in build-asan) >build-asan/quickstart.log 2>&1 &
    asan_build=$!
    check_in build
    phase "build-asan/ configured and built (build-asan/quickstart.log)"
    if ! wait "$asan_build"; then
        tail -40 build-asan/quickstart.log
        die "configure or make failed in build-asan/"
    fi
    grep '^==> ' build-asan/quickstart.log || true
    # The default build ran every world size (1-4, 4 oversubscribed); the sanitizer
    # build repeats the multi-rank tests at the odd N = 3 (oversubscribed on two
    # cores: the owner's and the other ranks' paths, the uneven splits), and the tests
    # that exist at one rank only at 1. distcheck proves the tarball complete: every
    # test program and script runs once from it (N = 1; each multi-rank test lists
    # it), reading every file it needs; its N = 3 would rerun the programs of
    # build/, compiled alike. Both keep CI under 20 minutes.
    ZERO_TEST_WORLD_SIZES=${SECOND_WORLD_SIZES:-3} check_in build-asan
    ZERO_TEST_WORLD_SIZES=${DISTCHECK_WORLD_SIZES:-1} distcheck_in build
fi
phase "quickstart.sh $mode: all done"
