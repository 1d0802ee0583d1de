# tests/aarch64/local.mk -- the exactness contract across architectures (included by
# tests/local.mk). `make check-aarch64` cross-builds libzero for aarch64 (Debian's
# gcc-aarch64-linux-gnu, arm64 libraries extracted into $(builddir)/aarch64/sysroot),
# runs the same programs under qemu-aarch64 and on this machine, and compares their
# hashes; it exits 77 (skip) where the tools cannot be had. Not part of make check.
noinst_PROGRAMS += tests/aarch64/exactness
tests_aarch64_exactness_SOURCES = tests/aarch64/exactness.c tests/exact_math_ref.h
tests_aarch64_exactness_LDADD = -lm
EXTRA_DIST += tests/aarch64/run.sh

check-aarch64: all
	$(SHELL) $(top_srcdir)/tests/aarch64/run.sh $(abs_top_builddir)
.PHONY: check-aarch64

# the cross build, its sysroot and outputs live in $(builddir)/aarch64
clean-local: clean-local-aarch64
clean-local-aarch64:
	rm -rf aarch64
.PHONY: clean-local-aarch64
