# zero_blas.m4 -- OpenBLAS (CBLAS interface).                                -*- Autoconf -*-

# ZERO_CHECK_OPENBLAS
# -------------------
# pkg-config `openblas' first, else a compile/link test of <cblas.h>,
# cblas_sgemm and openblas_set_num_threads with -lopenblas.  Sets and
# substitutes BLAS_CFLAGS and BLAS_LIBS (precious: user-set values win).
#
# libzero itself does not link OpenBLAS: the cpu backend loads it (dlopen) when
# native mode first needs it (backends/cpu/cpu_openblas.c), so ZERO_OPENBLAS_LIBRARY
# is defined to the file a program linked with BLAS_LIBS loads (dladdr of
# cblas_sgemm), or to libopenblas.so.0 when that cannot be run here.  dlopen's
# library (-ldl on older C libraries) goes into LIBS.
AC_DEFUN([ZERO_CHECK_OPENBLAS], [
AC_REQUIRE([PKG_PROG_PKG_CONFIG])
AS_IF([test -z "$BLAS_LIBS"], [
  PKG_CHECK_MODULES([BLAS], [openblas], [],
    [BLAS_CFLAGS=
     BLAS_LIBS=-lopenblas])
])
AC_SEARCH_LIBS([dlopen], [dl], [],
  [AC_MSG_ERROR([dlopen not found (the cpu backend loads OpenBLAS with it)])])
AC_MSG_CHECKING([for cblas_sgemm and openblas_set_num_threads ($BLAS_CFLAGS $BLAS_LIBS)])
zero_save_CPPFLAGS=$CPPFLAGS
zero_save_LIBS=$LIBS
CPPFLAGS="$CPPFLAGS $BLAS_CFLAGS"
LIBS="$BLAS_LIBS $LIBS"
AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <cblas.h>
void openblas_set_num_threads(int);]], [[
  float a = 1.0f, b = 2.0f, c = 0.0f;
  openblas_set_num_threads(1);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 1, 1, 1, 1.0f, &a, 1, &b, 1, 0.0f, &c, 1);
  return c == 2.0f ? 0 : 1;]])],
  [zero_blas_ok=yes], [zero_blas_ok=no])
AC_MSG_RESULT([$zero_blas_ok])
AS_IF([test "x$zero_blas_ok" = xno],
  [AC_MSG_ERROR([OpenBLAS not found: apt-get install libopenblas-dev (or set BLAS_CFLAGS/BLAS_LIBS)])])
AC_MSG_CHECKING([for the OpenBLAS file the cpu backend loads])
zero_openblas_library=libopenblas.so.0
AC_RUN_IFELSE([AC_LANG_PROGRAM([[#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <cblas.h>]], [[
  Dl_info info;
  FILE *f = fopen("conftest.blaspath", "w");
  if (f == NULL || !dladdr((void *)cblas_sgemm, &info) || info.dli_fname == NULL)
    return 1;
  fputs(info.dli_fname, f);
  return fclose(f) != 0;]])],
  [zero_openblas_library=`cat conftest.blaspath`], [],
  [zero_openblas_library=libopenblas.so.0]) dnl cross-compiling: the soname, found at run time
rm -f conftest.blaspath
CPPFLAGS=$zero_save_CPPFLAGS
LIBS=$zero_save_LIBS
AC_MSG_RESULT([$zero_openblas_library])
AC_DEFINE_UNQUOTED([ZERO_OPENBLAS_LIBRARY], ["$zero_openblas_library"],
  [the OpenBLAS shared library the cpu backend loads for native mode])
])
