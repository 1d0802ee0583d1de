# src/io/local.mk -- files: safetensors (Hugging Face's format) and asynchronous I/O.
libzero_la_SOURCES += \
	%reldir%/safetensors.c \
	%reldir%/safetensors_read.c \
	%reldir%/safetensors_write.c
noinst_HEADERS += %reldir%/safetensors_internal.h
zeroinclude_HEADERS += include/zero/safetensors.h
# asynchronous reads and writes at offsets (io_uring through liburing, else threads): NVMe swap
libzero_la_SOURCES += %reldir%/aio.c
noinst_HEADERS += %reldir%/aio.h
# Hugging Face model directories (config.json, sharded safetensors): zero/hf_model.h
libzero_la_SOURCES += \
	%reldir%/hf_config.c \
	%reldir%/hf_index.c \
	%reldir%/hf_weights.c \
	%reldir%/hf_writer.c
noinst_HEADERS += %reldir%/hf_index.h
zeroinclude_HEADERS += include/zero/hf_model.h
