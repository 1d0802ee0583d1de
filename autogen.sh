#!/bin/sh
# autogen.sh -- generate configure and Makefile.in from a git checkout.
# Then: mkdir -p build && cd build && ../configure && make -j && make check
set -e
cd "$(dirname "$0")"
exec autoreconf -fi "$@"
