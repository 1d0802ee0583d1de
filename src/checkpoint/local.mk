# src/checkpoint/local.mk -- sharded save / load on any world size, offline inspect and export.
libzero_la_SOURCES += \
	%reldir%/checkpoint_format.c \
	%reldir%/checkpoint_meta.c \
	%reldir%/checkpoint_fs.c \
	%reldir%/checkpoint_read.c \
	%reldir%/checkpoint_offline.c
noinst_HEADERS += %reldir%/checkpoint_internal.h
zeroinclude_HEADERS += include/zero/checkpoint.h
