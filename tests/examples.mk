# tests/examples.mk -- the example programs run end to end (included by tests/local.mk).
# tests/test_examples.sh runs examples/train_mlp and examples/custom_unit under
# mpirun at small sizes; it needs them built (noinst_PROGRAMS, built by `all').

TESTS += tests/test_examples.sh
EXTRA_DIST += tests/test_examples.sh

# tests/test_startup_agreement.sh: every rank of train_mlp, train_gpt and the zero
# tool's MPI commands agrees on its flags, config and input files before it acts
# (src/program/program.c); a difference or a one-rank error is named, never a hang.
TESTS += tests/test_startup_agreement.sh
EXTRA_DIST += tests/test_startup_agreement.sh

# tests/test_faults.sh: a fault on some ranks (the environment, or ZERO_FAULT at every
# site a small run passes) stops every rank within seconds with its message and loses
# or leaves no file (docs/faults.md). About 3 minutes on 2 cores; ZERO_FAULT_SWEEP=full
# tries every site on rank 0, the last rank and all ranks at 2, 3 and 4 ranks.
TESTS += tests/test_faults.sh
EXTRA_DIST += tests/test_faults.sh

# tests/test_memory_plan.sh: a model too big for the process's memory limit (ulimit -v)
# is refused before allocation with the per-tag plan
TESTS += tests/test_memory_plan.sh
EXTRA_DIST += tests/test_memory_plan.sh
