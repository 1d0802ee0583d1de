# zero_mpi.m4 -- MPI compiler wrapper, MPI link checks and the MPI launcher.   -*- Autoconf -*-

# ZERO_PROG_MPICC
# ---------------
# Choose the C compiler before AC_PROG_CC runs: a user-set MPICC wins, then a
# user-set CC (kept as is; ZERO_CHECK_MPI then verifies it links MPI), else
# mpicc from PATH.  Fails naming the Debian packages when nothing is found.
AC_DEFUN([ZERO_PROG_MPICC], [
AC_BEFORE([$0], [AC_PROG_CC])
AC_ARG_VAR([MPICC], [MPI C compiler wrapper used as CC (default: mpicc on PATH)])
AS_IF([test -n "$MPICC"], [
  set dummy $MPICC
  AS_IF([command -v "$[2]" >/dev/null 2>&1], [],
    [AC_MSG_ERROR([MPICC=$MPICC: no such program (apt-get install libopenmpi-dev openmpi-bin)])])
  CC=$MPICC
], [test -n "$CC"], [
  AC_MSG_NOTICE([using CC=$CC as set by the user; it must compile and link MPI programs])
], [
  AC_PATH_PROGS([MPICC], [mpicc mpicc.openmpi mpicc.mpich], [])
  AS_IF([test -z "$MPICC"],
    [AC_MSG_ERROR([MPI C compiler wrapper mpicc not found: apt-get install libopenmpi-dev openmpi-bin
(or set MPICC=/path/to/mpicc)])])
  CC=$MPICC
])
])

# ZERO_CHECK_MPI
# --------------
# Verify that $CC links MPI programs (falling back to pkg-config ompi-c/mpich
# flags added to CPPFLAGS/LIBS when CC is not a wrapper), that MPI-3 shared
# memory windows are available, and find the flavour.  Sets MPI_FLAVOR,
# MPI_NVCC_CFLAGS (include flags for nvcc, whose host compiler is not mpicc)
# and zero_mpi_pc_module (for zero.pc Requires.private).
AC_DEFUN([ZERO_CHECK_MPI], [
AC_REQUIRE([AC_PROG_CC])
AC_REQUIRE([PKG_PROG_PKG_CONFIG])
m4_pushdef([zero_mpi_prog], [AC_LANG_PROGRAM([[#include <mpi.h>]],
  [[int argc = 0; char **argv = 0; MPI_Init(&argc, &argv); MPI_Finalize();]])])
AC_MSG_CHECKING([whether $CC compiles and links MPI programs])
AC_LINK_IFELSE([zero_mpi_prog], [zero_mpi_ok=yes], [zero_mpi_ok=no])
AC_MSG_RESULT([$zero_mpi_ok])
AS_IF([test "x$zero_mpi_ok" = xno], [
  for zero_mod in ompi-c mpich mpi; do
    AS_IF([test -n "$PKG_CONFIG" && $PKG_CONFIG --exists $zero_mod], [
      AC_MSG_CHECKING([whether MPI links with pkg-config $zero_mod flags])
      zero_save_CPPFLAGS=$CPPFLAGS
      zero_save_LIBS=$LIBS
      CPPFLAGS="$CPPFLAGS `$PKG_CONFIG --cflags $zero_mod`"
      LIBS="`$PKG_CONFIG --libs $zero_mod` $LIBS"
      AC_LINK_IFELSE([zero_mpi_prog], [zero_mpi_ok=yes], [zero_mpi_ok=no])
      AC_MSG_RESULT([$zero_mpi_ok])
      AS_IF([test "x$zero_mpi_ok" = xyes], [break])
      CPPFLAGS=$zero_save_CPPFLAGS
      LIBS=$zero_save_LIBS
    ])
  done
])
AS_IF([test "x$zero_mpi_ok" = xno],
  [AC_MSG_ERROR([cannot compile and link an MPI program with CC=$CC: apt-get install libopenmpi-dev openmpi-bin
(or configure with MPICC=/path/to/mpicc)])])
m4_popdef([zero_mpi_prog])

AC_MSG_CHECKING([for MPI_Win_allocate_shared (MPI-3 shared-memory windows)])
AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <mpi.h>]], [[
  MPI_Win win; void *base;
  MPI_Win_allocate_shared(64, 1, MPI_INFO_NULL, MPI_COMM_SELF, &base, &win);
  MPI_Win_shared_query(win, 0, 0, 0, &base);
  MPI_Win_free(&win);]])],
  [AC_MSG_RESULT([yes])],
  [AC_MSG_RESULT([no])
   AC_MSG_ERROR([MPI_Win_allocate_shared not found: an MPI-3 library is required (apt-get install libopenmpi-dev openmpi-bin)])])

AC_MSG_CHECKING([MPI implementation])
AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <mpi.h>
#ifndef OPEN_MPI
#error not Open MPI
#endif]], [[]])], [MPI_FLAVOR="Open MPI"],
  [AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <mpi.h>
#ifndef MPICH
#error not MPICH
#endif]], [[]])], [MPI_FLAVOR="MPICH"], [MPI_FLAVOR="unknown MPI"])])
AC_MSG_RESULT([$MPI_FLAVOR])

zero_mpi_pc_module=
AS_CASE([$MPI_FLAVOR],
  ["Open MPI"], [AS_IF([test -n "$PKG_CONFIG" && $PKG_CONFIG --exists ompi-c], [zero_mpi_pc_module=ompi-c])],
  ["MPICH"], [AS_IF([test -n "$PKG_CONFIG" && $PKG_CONFIG --exists mpich], [zero_mpi_pc_module=mpich])])

# Include flags for mpi.h when compiling with nvcc (host compiler g++, not mpicc).
AC_MSG_CHECKING([MPI include flags for nvcc])
MPI_NVCC_CFLAGS=
AS_IF([test -n "$zero_mpi_pc_module"],
  [MPI_NVCC_CFLAGS=`$PKG_CONFIG --cflags-only-I $zero_mpi_pc_module`],
  [MPI_NVCC_CFLAGS=`$CC --showme:incdirs 2>/dev/null | sed 's/^/ /; s/  */ -I/g'`])
AC_MSG_RESULT([${MPI_NVCC_CFLAGS:-none}])
AC_SUBST([MPI_FLAVOR])
AC_SUBST([MPI_NVCC_CFLAGS])
])

# ZERO_PROG_MPIRUN
# ----------------
# Find the launcher used by `make check' (tests/mpirun-wrapper) and the
# flags that make N ranks run reliably on a small machine, as root, in a
# container: MPIRUN, MPIRUN_FLAGS (both precious, both substituted).
AC_DEFUN([ZERO_PROG_MPIRUN], [
AC_ARG_VAR([MPIRUN], [MPI launcher used by make check (default: mpirun/mpiexec next to mpicc, else on PATH)])
AC_ARG_VAR([MPIRUN_FLAGS], [extra flags for MPIRUN in make check (default for Open MPI: --allow-run-as-root --oversubscribe --bind-to none --mca pml ob1 --mca btl self,vader)])
zero_cc_dir=
set dummy $CC; zero_cc_word=$[2]
zero_cc_path=`command -v "$zero_cc_word" 2>/dev/null`
AS_IF([test -n "$zero_cc_path"], [zero_cc_dir=`AS_DIRNAME(["$zero_cc_path"])`])
AC_PATH_PROGS([MPIRUN], [mpirun mpiexec mpirun.openmpi mpiexec.hydra], [],
  [${zero_cc_dir:+$zero_cc_dir$PATH_SEPARATOR}$PATH])
AS_IF([test -z "$MPIRUN"],
  [AC_MSG_ERROR([MPI launcher mpirun/mpiexec not found: apt-get install openmpi-bin (or set MPIRUN=/path/to/mpirun)])])
AC_MSG_CHECKING([flags for $MPIRUN in make check])
AS_IF([test "x${MPIRUN_FLAGS+set}" != xset], [
  AS_IF([$MPIRUN --version 2>&1 | grep -E 'Open MPI|OpenRTE' >/dev/null 2>&1],
    [MPIRUN_FLAGS="--allow-run-as-root --oversubscribe --bind-to none --mca pml ob1 --mca btl self,vader"],
    [MPIRUN_FLAGS=])
])
AC_MSG_RESULT([${MPIRUN_FLAGS:-none}])
])
