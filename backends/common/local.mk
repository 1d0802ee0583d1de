# backends/common/local.mk -- what the backends share (included by the top-level Makefile.am):
# their MPI set-up (communicator duplicate, node split) and the format of their last error. Only backends include these
# headers, as "common/backend_mpi.h"; the core never sees MPI.
libzero_la_SOURCES += %reldir%/backend_mpi.c %reldir%/backend_error.c
noinst_HEADERS += %reldir%/backend_mpi.h %reldir%/backend_error.h
libzero_la_CPPFLAGS += -I$(top_srcdir)/backends
