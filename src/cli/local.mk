# src/cli/local.mk -- the zero command-line tool (included by the top-level Makefile.am).
# Append only, e.g.:  bin_PROGRAMS += %reldir%/zero   src_cli_zero_SOURCES = %reldir%/main.c   src_cli_zero_LDADD = libzero.la

# The zero tool: a dispatcher (zero.c) and one file per subcommand (see commands.h).
bin_PROGRAMS += %reldir%/zero
src_cli_zero_SOURCES = %reldir%/zero.c %reldir%/commands.h %reldir%/selftest.c
src_cli_zero_LDADD = libzero.la
