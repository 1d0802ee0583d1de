# src/nn/local.mk -- the model container and the built-in layers (included by Makefile.am).
libzero_la_SOURCES += \
	src/model.c \
	%reldir%/nn_error.c \
	%reldir%/linear.c \
	%reldir%/gelu.c \
	%reldir%/mlp_block.c \
	%reldir%/classifier.c \
	%reldir%/mlp_model.c
noinst_HEADERS += %reldir%/nn_internal.h
zeroinclude_HEADERS += include/zero/model.h include/zero/nn.h
