# config and schedules: DeepSpeed's defaults, batch rule and lr schedules (single process)
check_PROGRAMS += tests/test_config_batch tests/test_lr_schedule
tests_test_config_batch_SOURCES = tests/test_config_batch.c
tests_test_config_batch_CFLAGS = $(AM_CFLAGS) $(TEST_CFLAGS)
tests_test_config_batch_LDADD = $(TEST_LDADD)
tests_test_lr_schedule_SOURCES = tests/test_lr_schedule.c
tests_test_lr_schedule_CFLAGS = $(AM_CFLAGS) $(TEST_CFLAGS)
tests_test_lr_schedule_LDADD = $(TEST_LDADD)
TESTS += tests/test_config_batch tests/test_lr_schedule
