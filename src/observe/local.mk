# src/observe/local.mk -- what a run tells: the memory ledger, comm counters, the Chrome trace,
# the estimator's and the paper's formulas, SVG charts.
libzero_la_SOURCES += \
	%reldir%/ledger.c \
	%reldir%/comm_stats.c \
	%reldir%/trace.c \
	%reldir%/trace_steps.c \
	%reldir%/estimate.c \
	%reldir%/theory.c \
	%reldir%/svg_chart.c
zeroinclude_HEADERS += include/zero/ledger.h include/zero/comm_stats.h include/zero/estimate.h \
	include/zero/trace.h include/zero/svg_chart.h
