# src/config/local.mk -- ds_config.json: DeepSpeed's configuration files, validated.
# Listed by floor (docs/design.md, "The config's files"): a file calls only files
# on lower floors. 0: defaults and batch rule, the key table, a value as text;
# 1: origins, "auto", unsupported features; 2: the one validation path; 3: the
# entry points, the loader and the printer.
libzero_la_SOURCES += \
	%reldir%/config.c \
	%reldir%/config_keys.c \
	%reldir%/config_format.c \
	%reldir%/config_origin.c \
	%reldir%/config_auto.c \
	%reldir%/config_unsupported.c \
	%reldir%/config_validate.c \
	%reldir%/config_json.c \
	%reldir%/config_print.c
noinst_HEADERS += \
	%reldir%/config_keys.h \
	%reldir%/config_format.h \
	%reldir%/config_auto.h \
	%reldir%/config_unsupported.h \
	%reldir%/config_validate.h
zeroinclude_HEADERS += include/zero/config_json.h
