# tests/examples.mk -- the example programs run end to end (included by tests/local.mk).
# tests/test_examples.sh runs examples/train_mlp and examples/custom_unit under
# mpirun at small sizes; it needs them built (noinst_PROGRAMS, built by `all').

TESTS += tests/test_examples.sh
EXTRA_DIST += tests/test_examples.sh

# tests/test_startup_agreement.sh: every rank of train_mlp, train_gpt and the zero
# tool's MPI commands agrees on its flags, config and input files before it acts
# (examples/program.c); a difference or a one-rank error is named, never a hang.
TESTS += tests/test_startup_agreement.sh
EXTRA_DIST += tests/test_startup_agreement.sh

# tests/test_memory_plan.sh: a model too big for the process's memory limit (ulimit -v)
# is refused before allocation with the per-tag plan
TESTS += tests/test_memory_plan.sh
EXTRA_DIST += tests/test_memory_plan.sh
