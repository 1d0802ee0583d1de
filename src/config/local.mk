# src/config/local.mk -- ds_config.json: DeepSpeed's configuration files, validated.
# (key table, unsupported keys, loader, printer, "auto" resolution, the one validation path)
libzero_la_SOURCES += \
	%reldir%/config.c \
	%reldir%/config_keys.c \
	%reldir%/config_unsupported.c \
	%reldir%/config_json.c \
	%reldir%/config_print.c \
	%reldir%/config_format.c \
	%reldir%/config_origin.c \
	%reldir%/config_auto.c \
	%reldir%/config_validate.c
noinst_HEADERS += %reldir%/config_keys.h %reldir%/config_format.h
zeroinclude_HEADERS += include/zero/config_json.h
