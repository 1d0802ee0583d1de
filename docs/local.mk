# docs/local.mk -- documentation (included by the top-level Makefile.am).
# Append only, e.g.:  EXTRA_DIST += %reldir%/stages.md
