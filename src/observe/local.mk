# src/observe/local.mk -- what a run tells: comm counters, the Chrome trace, the estimator's
# formulas (SVG charts are the cli's, src/cli/svg_chart.c; the ledger is src/base's, the paper's numbers for an engine src/engine's).
libzero_la_SOURCES += \
	%reldir%/comm_stats.c \
	%reldir%/trace.c \
	%reldir%/trace_steps.c \
	%reldir%/estimate.c
zeroinclude_HEADERS += include/zero/comm_stats.h include/zero/estimate.h \
	include/zero/trace.h
