# zero_cuda.m4 -- CUDA toolkit (nvcc, cudart, cuBLAS, cuBLASLt) and NCCL.     -*- Autoconf -*-

# ZERO_CHECK_CUDA
# ---------------
# --with-cuda[=DIR] (default: no).  `yes' means /usr/local/cuda, else the
# toolkit around nvcc on PATH (or $NVCC).  Sets and substitutes NVCC,
# NVCC_FLAGS, CUDA_HOME, CUDA_CFLAGS, CUDA_LIBS, CUDA_LIBDIR; defines
# ZERO_HAVE_CUDA; AM_CONDITIONAL HAVE_CUDA.  No GPU is needed at build time.
AC_DEFUN([ZERO_CHECK_CUDA], [
AC_REQUIRE([AC_PROG_CC])
AC_ARG_WITH([cuda],
  [AS_HELP_STRING([--with-cuda@<:@=DIR@:>@],
    [build the CUDA backend (cudart, cuBLAS, cuBLASLt, .cu kernels); DIR is the toolkit root
     (default for yes: /usr/local/cuda, else the toolkit of nvcc on PATH) @<:@no@:>@])],
  [], [with_cuda=no])
AC_ARG_VAR([NVCC], [CUDA compiler driver (default: DIR/bin/nvcc)])
AC_ARG_VAR([NVCC_FLAGS], [flags for nvcc (default: -O3 -std=c++17 -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 -Xcompiler -fPIC)])
zero_have_cuda=no
CUDA_HOME=
CUDA_CFLAGS=
CUDA_LIBS=
CUDA_LIBDIR=
AS_IF([test "x$with_cuda" != xno], [
  AS_IF([test "x$with_cuda" != xyes], [
    CUDA_HOME=$with_cuda
    AS_IF([test -z "$NVCC"], [NVCC=$CUDA_HOME/bin/nvcc])
  ], [test -n "$NVCC"], [
    :
  ], [test -x /usr/local/cuda/bin/nvcc], [
    CUDA_HOME=/usr/local/cuda
    NVCC=$CUDA_HOME/bin/nvcc
  ], [
    AC_PATH_PROG([NVCC], [nvcc], [])
  ])
  AC_MSG_CHECKING([for nvcc])
  zero_nvcc_path=
  AS_IF([test -n "$NVCC"], [zero_nvcc_path=`command -v "$NVCC" 2>/dev/null`])
  AS_IF([test -z "$zero_nvcc_path"], [
    AC_MSG_RESULT([no])
    AC_MSG_ERROR([--with-cuda: nvcc not found (NVCC='$NVCC'): install the CUDA toolkit, put nvcc on PATH or pass --with-cuda=DIR])])
  AC_MSG_RESULT([$zero_nvcc_path])
  AS_IF([test -z "$CUDA_HOME"], [
    zero_nvcc_bindir=`AS_DIRNAME(["$zero_nvcc_path"])`
    CUDA_HOME=`AS_DIRNAME(["$zero_nvcc_bindir"])`
  ])
  AS_IF([test ! -f "$CUDA_HOME/include/cuda_runtime.h"],
    [AC_MSG_ERROR([--with-cuda: $CUDA_HOME/include/cuda_runtime.h not found; pass --with-cuda=DIR (the toolkit root)])])
  AC_MSG_CHECKING([for the CUDA library directory])
  for zero_d in "$CUDA_HOME/lib64" "$CUDA_HOME/lib" "$CUDA_HOME/targets/x86_64-linux/lib" "$CUDA_HOME/targets/sbsa-linux/lib"; do
    AS_IF([test -f "$zero_d/libcudart.so"], [CUDA_LIBDIR=$zero_d; break])
  done
  AS_IF([test -z "$CUDA_LIBDIR"], [
    AC_MSG_RESULT([no])
    AC_MSG_ERROR([--with-cuda: libcudart.so not found under $CUDA_HOME (lib64, lib, targets/*/lib)])])
  AC_MSG_RESULT([$CUDA_LIBDIR])
  CUDA_CFLAGS="-I$CUDA_HOME/include"
  CUDA_LIBS="-L$CUDA_LIBDIR -lcublas -lcublasLt -lcudart -lstdc++"

  AC_MSG_CHECKING([whether C code links with cudart, cuBLAS and cuBLASLt])
  zero_save_CPPFLAGS=$CPPFLAGS
  zero_save_LIBS=$LIBS
  CPPFLAGS="$CPPFLAGS $CUDA_CFLAGS"
  LIBS="$CUDA_LIBS $LIBS"
  AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <cuda_runtime.h>
#include <cublasLt.h>
#include <cublas_v2.h>]], [[
  int n = 0; cublasHandle_t h; cublasLtHandle_t lt;
  if (cudaGetDeviceCount(&n) == cudaSuccess && cublasCreate(&h) == CUBLAS_STATUS_SUCCESS)
    cublasDestroy(h);
  if (cublasLtCreate(&lt) == CUBLAS_STATUS_SUCCESS)
    cublasLtDestroy(lt);]])],
    [AC_MSG_RESULT([yes])],
    [AC_MSG_RESULT([no])
     AC_MSG_ERROR([--with-cuda: cannot link cudart/cublas/cublasLt from $CUDA_LIBDIR (see config.log)])])
  CPPFLAGS=$zero_save_CPPFLAGS
  LIBS=$zero_save_LIBS

  AS_IF([test "x${NVCC_FLAGS+set}" != xset],
    [NVCC_FLAGS="-O3 -std=c++17 -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 -Xcompiler -fPIC"])
  AC_MSG_CHECKING([whether $NVCC works with NVCC_FLAGS=$NVCC_FLAGS])
  cat > conftest.cu <<_ZEROEOF
extern "C" __global__ void zero_conftest_kernel(float *x) { x@<:@threadIdx.x@:>@ = 0.0f; }
extern "C" int zero_conftest(void) { int n = 0; return cudaGetDeviceCount(&n) == cudaSuccess ? n : -1; }
_ZEROEOF
  AS_IF([$NVCC $NVCC_FLAGS -c conftest.cu -o conftest.$ac_objext >&AS_MESSAGE_LOG_FD 2>&1],
    [AC_MSG_RESULT([yes])],
    [AC_MSG_RESULT([no])
     AC_MSG_ERROR([--with-cuda: $NVCC cannot compile a kernel with NVCC_FLAGS=$NVCC_FLAGS (see config.log)])])
  rm -f conftest.cu conftest.$ac_objext
  zero_have_cuda=yes
  AC_DEFINE([ZERO_HAVE_CUDA], [1], [Define to 1 when the CUDA backend is built.])
])
AC_SUBST([NVCC])
AC_SUBST([NVCC_FLAGS])
AC_SUBST([CUDA_HOME])
AC_SUBST([CUDA_CFLAGS])
AC_SUBST([CUDA_LIBS])
AC_SUBST([CUDA_LIBDIR])
AM_CONDITIONAL([HAVE_CUDA], [test "x$zero_have_cuda" = xyes])
])

# ZERO_CHECK_NCCL
# ---------------
# --with-nccl[=DIR] (default: no; needs --with-cuda).  Looks for nccl.h and
# libnccl in DIR, else $CUDA_HOME, /usr/local/cuda, /usr.  Sets and
# substitutes NCCL_CFLAGS, NCCL_LIBS, NCCL_LIBDIR; defines ZERO_HAVE_NCCL;
# AM_CONDITIONAL HAVE_NCCL.
AC_DEFUN([ZERO_CHECK_NCCL], [
AC_REQUIRE([ZERO_CHECK_CUDA])
AC_ARG_WITH([nccl],
  [AS_HELP_STRING([--with-nccl@<:@=DIR@:>@],
    [use NCCL for the CUDA backend's collectives (needs --with-cuda); searched in DIR,
     else the CUDA toolkit, /usr/local/cuda, /usr @<:@no@:>@])],
  [], [with_nccl=no])
zero_have_nccl=no
NCCL_CFLAGS=
NCCL_LIBS=
NCCL_LIBDIR=
AS_IF([test "x$with_nccl" != xno], [
  AS_IF([test "x$zero_have_cuda" != xyes],
    [AC_MSG_ERROR([--with-nccl requires --with-cuda])])
  AS_IF([test "x$with_nccl" = xyes],
    [zero_nccl_dirs="$CUDA_HOME /usr/local/cuda /usr"],
    [zero_nccl_dirs="$with_nccl"])
  zero_multiarch=`$CC -print-multiarch 2>/dev/null`
  AC_MSG_CHECKING([for nccl.h and libnccl])
  zero_nccl_inc=
  for zero_d in $zero_nccl_dirs; do
    AS_IF([test -f "$zero_d/include/nccl.h"], [
      for zero_l in "$zero_d/lib64" "$zero_d/lib" ${zero_multiarch:+"$zero_d/lib/$zero_multiarch"} "$zero_d/targets/x86_64-linux/lib"; do
        AS_IF([test -f "$zero_l/libnccl.so" || test -f "$zero_l/libnccl_static.a"],
          [zero_nccl_inc=$zero_d/include; NCCL_LIBDIR=$zero_l; break])
      done
    ])
    AS_IF([test -n "$NCCL_LIBDIR"], [break])
  done
  AS_IF([test -z "$NCCL_LIBDIR"], [
    AC_MSG_RESULT([no])
    AC_MSG_ERROR([--with-nccl: nccl.h and libnccl not found in: $zero_nccl_dirs (install NCCL, e.g. apt-get install libnccl-dev, or pass --with-nccl=DIR)])])
  AC_MSG_RESULT([$zero_nccl_inc, $NCCL_LIBDIR])
  AS_IF([test "x$zero_nccl_inc" != x/usr/include], [NCCL_CFLAGS="-I$zero_nccl_inc"])
  NCCL_LIBS="-L$NCCL_LIBDIR -lnccl"
  AC_MSG_CHECKING([whether C code links with NCCL])
  zero_save_CPPFLAGS=$CPPFLAGS
  zero_save_LIBS=$LIBS
  CPPFLAGS="$CPPFLAGS $NCCL_CFLAGS $CUDA_CFLAGS"
  LIBS="$NCCL_LIBS $CUDA_LIBS $LIBS"
  AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <nccl.h>]],
    [[int v = 0; ncclUniqueId id; (void)id; return ncclGetVersion(&v) == ncclSuccess ? 0 : 1;]])],
    [AC_MSG_RESULT([yes])],
    [AC_MSG_RESULT([no])
     AC_MSG_ERROR([--with-nccl: cannot compile/link against NCCL in $NCCL_LIBDIR (see config.log)])])
  CPPFLAGS=$zero_save_CPPFLAGS
  LIBS=$zero_save_LIBS
  zero_have_nccl=yes
  AC_DEFINE([ZERO_HAVE_NCCL], [1], [Define to 1 when the CUDA backend uses NCCL.])
])
AC_SUBST([NCCL_CFLAGS])
AC_SUBST([NCCL_LIBS])
AC_SUBST([NCCL_LIBDIR])
AM_CONDITIONAL([HAVE_NCCL], [test "x$zero_have_nccl" = xyes])
])
