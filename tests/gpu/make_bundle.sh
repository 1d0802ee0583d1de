#!/bin/sh
# make_bundle.sh -- prepare, on a machine WITHOUT a GPU, what tests/gpu/run.sh
# needs on a GPU machine that has the CUDA driver and toolkit but no MPI, OpenBLAS,
# jansson or Check (the lent H200's image: nvcc and PyTorch, nothing of ours).
#
#   sh tests/gpu/make_bundle.sh            (from the repository root, after autoreconf)
#
# Builds the cuda backend statically into libzero (./configure --with-cuda --with-nccl
# --disable-shared in build-cuda/, so the programs carry libzero inside and no libtool
# wrapper or build path is needed), copies the programs the checks run into
# .gpu-bundle/bin, and the Debian packages of every shared library they (and Open MPI's
# mpirun) load, from the apt cache, into .gpu-bundle/debs. CUDA's own libraries
# (cudart, cuBLAS, NCCL) are not bundled: run.sh finds them there.
# .gpu-bundle/ is added to .git/info/exclude, so it travels only when `carry' names it.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
bundle=.gpu-bundle
build_dir=build-cuda
arch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)

# (a worktree's .git is a file: ask git where its exclude file is)
exclude=$(git rev-parse --git-path info/exclude 2>/dev/null || echo .git/info/exclude)
mkdir -p "$(dirname "$exclude")"
grep -qx "/$bundle/" "$exclude" 2>/dev/null || echo "/$bundle/" >>"$exclude"

mkdir -p "$build_dir"
if [ ! -f "$build_dir/Makefile" ] || ! grep -q 'disable-shared' "$build_dir/config.status"; then
    (cd "$build_dir" && ../configure --with-cuda --with-nccl --disable-shared >configure.out)
fi
# the programs run.sh runs (its list `progs' too)
progs="tests/test_cuda_backend tests/test_cuda_training tests/gpu/gemm_bench bench/gpt_mfu"
# shellcheck disable=SC2086 # $progs: one word per program
make -C "$build_dir" -j"$(nproc)" $progs >"$build_dir/bundle-make.out"

rm -rf "$bundle"
mkdir -p "$bundle/bin" "$bundle/debs"
for p in $progs; do
    cp "$build_dir/$p" "$bundle/bin/"
done

# shared libraries of our programs and of Open MPI's launcher and plugins, minus
# glibc's, the compiler runtime's and CUDA's (present on the GPU machine)
ompi_lib=/usr/lib/$arch/openmpi/lib
libs=$( (for f in "$bundle"/bin/* /usr/bin/orterun /usr/bin/orted "$ompi_lib"/openmpi3/*.so; do
            ldd "$f" 2>/dev/null || true
         done) | awk '/=> \// { print $3 }' | sort -u |
        grep -Ev '/(libc|libm|libdl|librt|libpthread|ld-linux[^/]*|libgcc_s|libstdc\+\+)\.so' |
        grep -Ev '/(libcuda|libcudart|libcublas|libcublasLt|libnccl|libnvidia[^/]*)\.so')
pkgs=$(for l in $libs; do
           real=$(readlink -f "$l")
           for p in "$l" "$real" "$(echo "$real" | sed 's|^/usr/lib/|/lib/|')" \
                    "$(echo "$real" | sed 's|^/lib/|/usr/lib/|')"; do
               dpkg -S "$p" 2>/dev/null && break
           done
       done | cut -d: -f1 | sort -u)
missing=
for p in $pkgs openmpi-bin openmpi-common libopenmpi3; do
    deb=$(find /var/cache/apt/archives -name "${p}_*.deb" | head -n 1)
    if [ -n "$deb" ]; then
        cp "$deb" "$bundle/debs/"
    else
        missing="$missing $p"
    fi
done
if [ -n "$missing" ]; then # not in the apt cache: fetch those few with apt's own client
    # shellcheck disable=SC2086 # $missing: one word per package
    (cd "$bundle/debs" && apt-get download $missing) ||
        echo "make_bundle: could not download:$missing" >&2
fi
du -sh "$bundle"
echo "make_bundle: ready; carry .gpu-bundle with the device run (see tests/gpu/run.sh)"
