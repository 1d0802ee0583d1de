#!/bin/sh
# test_docs_user.sh -- the course's quick pages (quickstart, memory, stages, exactness,
# configuration) as a normal user: the same run as
# tests/test_docs_commands.sh, but each command runs as `nobody' (runuser) without
# Open MPI's root switches, after the quickstart's set-up less its "only as root"
# line. Skips (77) unless run as root with runuser, and where nobody cannot run the
# build's programs (a build under a private home directory), and in the sanitizer
# build (test_docs_commands.sh runs these pages there).
ZERO_DOCS_USER=${ZERO_DOCS_USER:-nobody}
ZERO_DOCS_PAGES=${ZERO_DOCS_PAGES:-quick}
export ZERO_DOCS_USER ZERO_DOCS_PAGES
exec sh "${ZERO_TEST_SRCDIR:-$(dirname "$0")}/test_docs_commands.sh"
