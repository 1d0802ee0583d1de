# tests/reference.mk -- libzero as the reference for another run: zero diff, the
# trajectory file, the order seed and the rounding envelope (included by tests/local.mk).

# st_plant: safetensors files with planted differences (one ulp, a NaN, a transpose, a
# rename, a missing tensor, wrapper prefixes, a tied head) for test_diff.sh.
check_PROGRAMS += tests/st_plant
tests_st_plant_SOURCES = tests/st_plant.c
tests_st_plant_LDADD = libzero.la -lm

# zero diff on the planted files: each difference found, named and given its exit status.
TESTS += tests/test_diff.sh
EXTRA_DIST += tests/test_diff.sh

# the trajectory file's schema and hashes; --order-seed holding stages 0-3 and N = 1-4.
TESTS += tests/test_trajectory.sh
EXTRA_DIST += tests/test_trajectory.sh

# zero envelope of 4 order seeds; native mode and reorderings inside, planted bugs outside.
TESTS += tests/test_envelope.sh
EXTRA_DIST += tests/test_envelope.sh

# DeepSpeed 0.19.6's own schedulers' lr (tests/golden, made by hand) against train_mlp's.
TESTS += tests/test_lr_reference.sh
EXTRA_DIST += tests/test_lr_reference.sh tests/golden/ds_lr_schedules.txt \
	tests/golden/make_ds_lr_schedules.py
