# examples/local.mk -- example programs (included by the top-level Makefile.am).
# Append only, e.g.:  noinst_PROGRAMS += %reldir%/train_mlp   examples_train_mlp_LDADD = libzero.la

# The trainers share src/program's driver (libprogram.la): start-up agreement, the
# step loop's pieces, checkpoints, reference flags, reports, weights in .safetensors.
noinst_PROGRAMS += %reldir%/train_mlp
examples_train_mlp_SOURCES = %reldir%/train_mlp.c \
	%reldir%/mlp_args.c %reldir%/mlp_args.h \
	%reldir%/mlp_data.c %reldir%/mlp_data.h
examples_train_mlp_LDADD = libprogram.la libzero.la $(JANSSON_LIBS) -lm

noinst_PROGRAMS += %reldir%/custom_unit
examples_custom_unit_SOURCES = %reldir%/custom_unit.c
examples_custom_unit_LDADD = libzero.la -lm

# A GPT-2-shaped language model: the addition task, text or llm.c shards.
noinst_PROGRAMS += %reldir%/train_gpt
examples_train_gpt_SOURCES = %reldir%/train_gpt.c \
	%reldir%/gpt_args.c %reldir%/gpt_args.h \
	%reldir%/gpt_source.c %reldir%/gpt_source.h \
	%reldir%/gpt_generate.c %reldir%/gpt_generate.h \
	%reldir%/hf_io.c %reldir%/hf_io.h \
	%reldir%/stage_memory.c %reldir%/stage_memory.h
examples_train_gpt_LDADD = libprogram.la libzero.la $(JANSSON_LIBS) -lm
