# src/text/local.mk -- the model's own tokenizer: Hugging Face's tokenizer.json, encode and
# decode (include/zero/tokenizer.h; src/text/text_internal.h says which file does what).
libzero_la_SOURCES += \
	%reldir%/text_internal.h \
	%reldir%/buf.c \
	%reldir%/utf8.c \
	%reldir%/table.c \
	%reldir%/byte_level.c \
	%reldir%/load_util.c \
	%reldir%/normalizer.c \
	%reldir%/pretokenizer.c \
	%reldir%/bpe.c \
	%reldir%/added_tokens.c \
	%reldir%/post_processor.c \
	%reldir%/decoder.c \
	%reldir%/tokenizer.c
zeroinclude_HEADERS += include/zero/tokenizer.h
