/* Outputs replace only regular files (src/base/file_replace.h): a FIFO, a directory, a
 * character device or a symlink to one is refused with its path before anything
 * is renamed, and a failed write leaves the old file as it was. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/file_replace.h"

static char dir[64];

static void make_dir(void)
{
    snprintf(dir, sizeof dir, "/tmp/test_file_replace.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void remove_dir(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

static const char *in_dir(const char *name)
{
    static char path[4][128];
    static int k;
    k = (k + 1) % 4;
    snprintf(path[k], sizeof path[k], "%s/%s", dir, name);
    return path[k];
}

static int entries(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "ls -A '%s' | wc -l", dir);
    FILE *p = popen(cmd, "r");
    int n = -1;
    ck_assert_int_eq(fscanf(p, "%d", &n), 1);
    pclose(p);
    return n;
}

static void write_text(const char *path, const char *text)
{
    struct zero_replace r;
    struct zero_error err = {0};
    ck_assert_int_eq(zero_replace_begin(&r, path, &err), ZERO_OK);
    FILE *f = zero_replace_stream(&r, &err);
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    ck_assert_int_eq(zero_replace_commit(&r, &err), ZERO_OK);
}

static char *read_text(const char *path)
{
    static char buf[256];
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

START_TEST(test_creates_and_replaces_a_regular_file_leaving_no_temporary)
{
    make_dir();
    write_text(in_dir("out"), "one");
    ck_assert_str_eq(read_text(in_dir("out")), "one");
    write_text(in_dir("out"), "two");
    ck_assert_str_eq(read_text(in_dir("out")), "two");
    ck_assert_int_eq(entries(), 1);
    remove_dir();
}
END_TEST

START_TEST(test_refuses_a_fifo_a_directory_and_symlinks_to_them_naming_the_path)
{
    make_dir();
    struct zero_error err = {0};
    struct zero_replace r;
    ck_assert_int_eq(mkfifo(in_dir("fifo"), 0644), 0);
    ck_assert_int_eq(mkdir(in_dir("sub"), 0755), 0);
    ck_assert_int_eq(symlink("fifo", in_dir("to_fifo")), 0);
    ck_assert_int_eq(symlink("sub", in_dir("to_sub")), 0);
    ck_assert_int_eq(zero_replace_begin(&r, in_dir("fifo"), &err), ZERO_EINVAL);
    ck_assert_str_eq(err.msg, strcat(strcpy((char[160]){0}, in_dir("fifo")),
                                     ": is a FIFO, not a regular file: refusing to replace it"));
    ck_assert_int_eq(zero_replace_begin(&r, in_dir("sub"), &err), ZERO_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "sub: is a directory"));
    ck_assert_int_eq(zero_replace_begin(&r, in_dir("to_fifo"), &err), ZERO_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "to_fifo: is a symlink to a FIFO"));
    ck_assert_int_eq(zero_replace_begin(&r, in_dir("to_sub"), &err), ZERO_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "to_sub: is a symlink to a directory"));
    struct stat st;
    ck_assert(lstat(in_dir("fifo"), &st) == 0 && S_ISFIFO(st.st_mode));
    ck_assert_int_eq(entries(), 4); /* no temporary was left behind */
    remove_dir();
}
END_TEST

/* Only the check runs on /dev/null: nothing is created or renamed next to it. */
START_TEST(test_dev_null_is_refused_by_the_check)
{
    struct zero_error err = {0};
    ck_assert_int_eq(zero_replace_check("/dev/null", &err), ZERO_EINVAL);
    ck_assert_str_eq(
        err.msg, "/dev/null: is a character device, not a regular file: refusing to replace it");
}
END_TEST

/* Something that is not a regular file appears at path while the bytes are
 * written: the commit checks again before the rename, refuses, removes its
 * temporary and leaves the newcomer as it is. */
START_TEST(test_commit_rechecks_the_path_before_renaming)
{
    make_dir();
    struct zero_error err = {0};
    struct zero_replace r;
    ck_assert_int_eq(zero_replace_begin(&r, in_dir("out"), &err), ZERO_OK);
    ck_assert_int_eq(write(r.fd, "x", 1), 1);
    ck_assert_int_eq(mkfifo(in_dir("out"), 0644), 0);
    ck_assert_int_eq(zero_replace_commit(&r, &err), ZERO_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "out: is a FIFO"));
    struct stat st;
    ck_assert(lstat(in_dir("out"), &st) == 0 && S_ISFIFO(st.st_mode));
    ck_assert_int_eq(entries(), 1);
    remove_dir();
}
END_TEST

START_TEST(test_abort_keeps_the_old_file)
{
    make_dir();
    write_text(in_dir("out"), "old");
    struct zero_error err = {0};
    struct zero_replace r;
    ck_assert_int_eq(zero_replace_begin(&r, in_dir("out"), &err), ZERO_OK);
    ck_assert_int_eq(write(r.fd, "new", 3), 3);
    zero_replace_abort(&r);
    zero_replace_abort(&r); /* twice is harmless */
    ck_assert_str_eq(read_text(in_dir("out")), "old");
    ck_assert_int_eq(entries(), 1);
    remove_dir();
}
END_TEST

int main(void)
{
    Suite *suite = suite_create("file_replace");
    TCase *tc = tcase_create("outputs");
    tcase_add_test(tc, test_creates_and_replaces_a_regular_file_leaving_no_temporary);
    tcase_add_test(tc, test_refuses_a_fifo_a_directory_and_symlinks_to_them_naming_the_path);
    tcase_add_test(tc, test_dev_null_is_refused_by_the_check);
    tcase_add_test(tc, test_commit_rechecks_the_path_before_renaming);
    tcase_add_test(tc, test_abort_keeps_the_old_file);
    suite_add_tcase(suite, tc);
    SRunner *sr = srunner_create(suite);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
