# backends/common/local.mk -- what the backends share (included by the top-level Makefile.am):
# their MPI set-up (communicator duplicate, node split) and the format of their last error. Only backends include these
# headers, as "common/backend_mpi.h"; the core never sees MPI.
#   job_mpi.c   zero/job.h over MPI: the job's start and end, communicators and the exchanges
#               programs make (src/program, src/cli, examples); the library never calls it
libzero_la_SOURCES += %reldir%/backend_mpi.c %reldir%/backend_error.c %reldir%/job_mpi.c
zeroinclude_HEADERS += include/zero/job.h
noinst_HEADERS += %reldir%/backend_mpi.h %reldir%/backend_error.h
libzero_la_CPPFLAGS += -I$(top_srcdir)/backends
