# src/io/local.mk -- safetensors files (Hugging Face's format): read, write, validate.
libzero_la_SOURCES += \
	%reldir%/safetensors.c \
	%reldir%/safetensors_read.c \
	%reldir%/safetensors_write.c
noinst_HEADERS += %reldir%/safetensors_internal.h
zeroinclude_HEADERS += include/zero/safetensors.h
