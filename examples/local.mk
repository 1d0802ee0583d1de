# examples/local.mk -- example programs (included by the top-level Makefile.am).
# Append only, e.g.:  noinst_PROGRAMS += %reldir%/train_mlp   examples_train_mlp_LDADD = libzero.la

# Pieces the example trainers share: end-of-run tables, weights in
# .safetensors, MPI status agreement, the program driver (start-up agreement,
# run loop).
EXAMPLES_COMMON = %reldir%/report.c %reldir%/report.h \
	%reldir%/weights_io.c %reldir%/weights_io.h \
	%reldir%/hf_io.c %reldir%/hf_io.h \
	%reldir%/example_mpi.c %reldir%/example_mpi.h \
	%reldir%/stage_memory.c %reldir%/stage_memory.h \
	%reldir%/checkpointing.c %reldir%/checkpointing.h \
	%reldir%/program.c %reldir%/program.h \
	%reldir%/program_run.c %reldir%/program_run.h \
	%reldir%/program_signal.c %reldir%/program_signal.h \
	%reldir%/reference_flags.c %reldir%/reference_flags.h \
	%reldir%/trajectory.c %reldir%/trajectory.h \
	%reldir%/sample_order.c %reldir%/sample_order.h \
	%reldir%/flag_number.c %reldir%/flag_number.h

noinst_PROGRAMS += %reldir%/train_mlp
examples_train_mlp_SOURCES = %reldir%/train_mlp.c \
	%reldir%/mlp_args.c %reldir%/mlp_args.h \
	%reldir%/mlp_data.c %reldir%/mlp_data.h \
	$(EXAMPLES_COMMON)
examples_train_mlp_LDADD = libzero.la $(JANSSON_LIBS) -lm

noinst_PROGRAMS += %reldir%/custom_unit
examples_custom_unit_SOURCES = %reldir%/custom_unit.c
examples_custom_unit_LDADD = libzero.la -lm

# A GPT-2-shaped language model: the addition task, text or llm.c shards.
noinst_PROGRAMS += %reldir%/train_gpt
examples_train_gpt_SOURCES = %reldir%/train_gpt.c \
	%reldir%/gpt_args.c %reldir%/gpt_args.h \
	%reldir%/gpt_source.c %reldir%/gpt_source.h \
	%reldir%/gpt_generate.c %reldir%/gpt_generate.h \
	$(EXAMPLES_COMMON)
examples_train_gpt_LDADD = libzero.la $(JANSSON_LIBS) -lm
