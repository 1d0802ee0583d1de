# src/data/local.mk -- token sources for language models and deterministic synthetic batches.
libzero_la_SOURCES += \
	%reldir%/token_file.c \
	%reldir%/token_split.c \
	%reldir%/addition.c \
	%reldir%/synthetic.c \
	%reldir%/atom.c
zeroinclude_HEADERS += include/zero/tokens.h include/zero/addition.h include/zero/synthetic.h \
	include/zero/atom.h
