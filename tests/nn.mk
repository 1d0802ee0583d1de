# tests/nn.mk -- nn tests (included by tests/local.mk); see tests/local.mk for how to add a test.

# The model container and the toy MLP's shape: unit objects only, no backend.
check_PROGRAMS += tests/test_model
tests_test_model_SOURCES = tests/test_model.c
tests_test_model_CFLAGS = $(AM_CFLAGS) $(TEST_CFLAGS)
tests_test_model_LDADD = $(TEST_LDADD)
TESTS += tests/test_model

# Every built-in layer against float64 references and finite differences (cpu backend).
check_PROGRAMS += tests/test_nn_gradcheck
tests_test_nn_gradcheck_SOURCES = tests/test_nn_gradcheck.c tests/gradcheck_rig.c \
	tests/gradcheck_rig.h tests/gradcheck.c tests/gradcheck.h
tests_test_nn_gradcheck_CFLAGS = $(AM_CFLAGS) $(TEST_CFLAGS)
tests_test_nn_gradcheck_LDADD = $(TEST_LDADD)
TESTS += tests/test_nn_gradcheck.np1
