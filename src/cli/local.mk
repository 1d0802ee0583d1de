# src/cli/local.mk -- the zero command-line tool (included by the top-level Makefile.am).
# Append only, e.g.:  bin_PROGRAMS += %reldir%/zero   src_cli_zero_SOURCES = %reldir%/main.c   src_cli_zero_LDADD = libzero.la

# The zero tool: a dispatcher (zero.c) and one file per subcommand (see commands.h).
bin_PROGRAMS += %reldir%/zero
src_cli_zero_SOURCES = %reldir%/zero.c %reldir%/commands.h %reldir%/selftest.c
# the commands that run under MPI agree on start-up and step through src/program's driver
src_cli_zero_LDADD = libprogram.la libzero.la $(JANSSON_LIBS)

# ds_config.json: zero config FILE [--world N]
src_cli_zero_SOURCES += %reldir%/config_cmd.c

# observability: memory estimator, collective schedule, measured memory chart, divergence locator
src_cli_zero_SOURCES += %reldir%/cli_run.c %reldir%/cli_run.h %reldir%/estimate.c \
	%reldir%/schedule.c %reldir%/memory.c %reldir%/verify.c
# the stacked bars of zero estimate --svg and zero memory --svg
src_cli_zero_SOURCES += %reldir%/svg_chart.c %reldir%/svg_chart.h

# checkpoints: zero ckpt inspect DIR | zero ckpt export DIR -o FILE [--dtype D]
src_cli_zero_SOURCES += %reldir%/ckpt.c

# text to token shards and back: zero tokenize --tokenizer tokenizer.json FILE... --out DIR
src_cli_zero_SOURCES += %reldir%/tokenize.c

# another run's weights against ours: zero diff A B [--envelope FILE]
src_cli_zero_SOURCES += %reldir%/diff.c %reldir%/diff_weights.c %reldir%/diff_weights.h \
	%reldir%/tensor_diff.c %reldir%/tensor_diff.h %reldir%/weight_names.c \
	%reldir%/weight_names.h %reldir%/envelope.c %reldir%/envelope.h \
	%reldir%/diff_trajectory.c %reldir%/diff_trajectory.h \
	%reldir%/trajectory_read.c %reldir%/trajectory_read.h %reldir%/envelope_cmd.c
