# src/program/local.mk -- the program driver (included by src/local.mk). train_mlp,
# train_gpt and the zero tool's MPI runs link it; libzero does not: a program starts the
# job and exchanges over it (zero/job.h), the library never does (tests/test_layers.sh:
# src/ library code includes nothing from here).
#   program.c, program_run.c  start-up agreement, the step loop's pieces, a trainer's
#                             life cycle (the job's start to its end)
#   program_signal.c          SIGTERM/SIGINT recorded, agreed after each step
#   checkpointing.c           --save-checkpoint, --checkpoint-every, --keep-last, --resume
#   reference_flags.c         --trajectory, --trajectory-weights-every, --order-seed
#   trajectory.c, sample_order.c  what those flags write and read
#   example_agree.c           a status agreed over the job (zero/job.h)
#   report.c                  the end-of-run memory and communication tables
#   weights_io.c              whole weights in .safetensors (--init-weights, --save-weights)
#   flags.c, flag_number.c    every program's flag table: parser, --help lines, fields;
#                             numbers in flags, checked
noinst_LTLIBRARIES += libprogram.la
libprogram_la_SOURCES = %reldir%/program.c %reldir%/program.h \
	%reldir%/program_run.c %reldir%/program_run.h \
	%reldir%/program_signal.c %reldir%/program_signal.h \
	%reldir%/checkpointing.c %reldir%/checkpointing.h \
	%reldir%/reference_flags.c %reldir%/reference_flags.h \
	%reldir%/trajectory.c %reldir%/trajectory.h \
	%reldir%/sample_order.c %reldir%/sample_order.h \
	%reldir%/example_agree.c %reldir%/example_agree.h \
	%reldir%/report.c %reldir%/report.h \
	%reldir%/weights_io.c %reldir%/weights_io.h \
	%reldir%/flag_number.c %reldir%/flag_number.h \
	%reldir%/flags.c %reldir%/flags.h
