# zero_blas.m4 -- OpenBLAS (CBLAS interface).                                -*- Autoconf -*-

# ZERO_CHECK_OPENBLAS
# -------------------
# pkg-config `openblas' first, else a compile/link test of <cblas.h>,
# cblas_sgemm and openblas_set_num_threads with -lopenblas.  Sets and
# substitutes BLAS_CFLAGS and BLAS_LIBS (precious: user-set values win), and
# zero_blas_pc_module (openblas or empty) for zero.pc.
AC_DEFUN([ZERO_CHECK_OPENBLAS], [
AC_REQUIRE([PKG_PROG_PKG_CONFIG])
zero_blas_pc_module=
AS_IF([test -z "$BLAS_LIBS"], [
  PKG_CHECK_MODULES([BLAS], [openblas], [zero_blas_pc_module=openblas],
    [BLAS_CFLAGS=
     BLAS_LIBS=-lopenblas])
])
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
CPPFLAGS=$zero_save_CPPFLAGS
LIBS=$zero_save_LIBS
AC_MSG_RESULT([$zero_blas_ok])
AS_IF([test "x$zero_blas_ok" = xno],
  [AC_MSG_ERROR([OpenBLAS not found: apt-get install libopenblas-dev (or set BLAS_CFLAGS/BLAS_LIBS)])])
])
