/* The checkpoint format without an engine: CRC32C matches RFC 3720's test
 * vectors, meta.json survives a write/parse round trip exactly (doubles, 64-bit
 * seeds and the atom order included), a meta.json written before
 * config.libzero.atom_order existed reads as micro_step_major, and malformed
 * metadata is rejected naming the key. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint/checkpoint_internal.h"
#include "base/crc32c.h"

START_TEST(test_crc32c_matches_rfc3720_vectors)
{
    unsigned char buf[32];
    ck_assert_uint_eq(zero_crc32c(0, "123456789", 9), 0xE3069283u);
    memset(buf, 0, sizeof buf);
    ck_assert_uint_eq(zero_crc32c(0, buf, 32), 0x8A9136AAu);
    memset(buf, 0xff, sizeof buf);
    ck_assert_uint_eq(zero_crc32c(0, buf, 32), 0x62A8AB43u);
    for (int i = 0; i < 32; i++)
        buf[i] = (unsigned char)i;
    ck_assert_uint_eq(zero_crc32c(0, buf, 32), 0x46DD794Eu);
    for (int i = 0; i < 32; i++)
        buf[i] = (unsigned char)(31 - i);
    ck_assert_uint_eq(zero_crc32c(0, buf, 32), 0x113FDB5Cu);
    /* chaining pieces gives the CRC of the whole */
    ck_assert_uint_eq(zero_crc32c(zero_crc32c(0, "1234", 4), "56789", 5), 0xE3069283u);
    ck_assert_uint_eq(zero_crc32c(0, "", 0), 0u);
}
END_TEST

static void sample_meta(struct ckpt_meta *m, struct ckpt_unit *units)
{
    memset(m, 0, sizeof *m);
    memset(units, 0, 2 * sizeof *units);
    zero_config_defaults(&m->cfg);
    m->cfg.optimizer.lr = 0.1 + 0.2; /* not a short decimal */
    m->cfg.libzero.seed = 18446744073709551615ULL;
    m->cfg.fp16.enabled = 1;
    m->cfg.libzero.atom_order = ZERO_ATOM_RANK_MAJOR;
    m->format_version = CKPT_FORMAT_VERSION;
    snprintf(m->libzero_version, sizeof m->libzero_version, "test");
    m->id = 0xfedcba9876543210ULL;
    m->world = 3;
    m->stage = 2;
    m->precision = ZERO_F16;
    m->nkinds = 3;
    m->kinds[0] = CKPT_MASTER;
    m->kinds[1] = CKPT_EXP_AVG;
    m->kinds[2] = CKPT_EXP_AVG_SQ;
    m->chunk = 7;
    m->global_steps = 12;
    m->applied_steps = 10;
    m->micro_steps = 24;
    m->next_lr = 1.0 / 3.0;
    m->has_scaler = 1;
    m->scaler = (struct zero_loss_scaler){.dynamic = 1,
                                          .scale = 65536.0,
                                          .factor = 2.0,
                                          .window = 1000,
                                          .min_scale = 1.0,
                                          .delayed_shift = 2,
                                          .cur_hysteresis = 1,
                                          .cur_iter = 12,
                                          .last_overflow_iter = 9};
    m->nunits = 2;
    m->units = units;
    snprintf(units[0].name, sizeof units[0].name, "layers.0");
    units[0].nparams = 2;
    units[0].params[0] = (struct ckpt_param){"0.weight", 2, {4, 3}, 0, 12};
    units[0].params[1] = (struct ckpt_param){"0.bias", 1, {4}, 16, 4};
    units[0].used = 20;
    units[0].padded = 48;
    units[0].shard = 16;
    snprintf(units[1].name, sizeof units[1].name, "empty");
    m->user_json = "{\"cursor\":300}";
}

START_TEST(test_meta_json_round_trips_exactly)
{
    struct ckpt_meta m, back;
    struct ckpt_unit units[2];
    struct zero_error err = {0};
    char *text = NULL;
    sample_meta(&m, units);
    ck_assert_int_eq(ckpt_meta_write(&m, &text, &err), 0);
    ck_assert_msg(ckpt_meta_parse(&back, text, strlen(text), "meta.json", &err) == 0, "%s",
                  err.msg);
    ck_assert(back.id == m.id && back.world == 3 && back.stage == 2 && back.precision == ZERO_F16 &&
              back.chunk == 7 && back.nkinds == 3);
    ck_assert(back.global_steps == 12 && back.applied_steps == 10 && back.micro_steps == 24);
    ck_assert(back.next_lr == m.next_lr && back.cfg.optimizer.lr == m.cfg.optimizer.lr);
    ck_assert(back.cfg.libzero.seed == m.cfg.libzero.seed);
    ck_assert_int_eq(back.cfg.libzero.atom_order, ZERO_ATOM_RANK_MAJOR);
    ck_assert_msg(strstr(text, "\"atom_order\": \"rank_major\""), "%s", text);
    const struct zero_loss_scaler *x = &back.scaler, *y = &m.scaler;
    ck_assert(x->dynamic == y->dynamic && x->scale == y->scale && x->factor == y->factor &&
              x->window == y->window && x->min_scale == y->min_scale &&
              x->delayed_shift == y->delayed_shift && x->cur_hysteresis == y->cur_hysteresis &&
              x->consecutive_hysteresis == y->consecutive_hysteresis &&
              x->cur_iter == y->cur_iter && x->last_overflow_iter == y->last_overflow_iter);
    ck_assert_int_eq(back.nunits, 2);
    for (int u = 0; u < 2; u++) {
        const struct ckpt_unit *a = &back.units[u], *b = &units[u];
        ck_assert(strcmp(a->name, b->name) == 0 && a->nparams == b->nparams && a->used == b->used &&
                  a->padded == b->padded && a->shard == b->shard);
        for (int p = 0; p < a->nparams; p++)
            ck_assert(strcmp(a->params[p].name, b->params[p].name) == 0 &&
                      a->params[p].ndim == b->params[p].ndim &&
                      memcmp(a->params[p].shape, b->params[p].shape,
                             (size_t)a->params[p].ndim * 8) == 0 &&
                      a->params[p].offset == b->params[p].offset &&
                      a->params[p].numel == b->params[p].numel);
    }
    ck_assert_str_eq(back.user_json, "{\"cursor\":300}");
    ck_assert_int_eq(ckpt_rank_file_bytes(&back),
                     64 + 3 * (64 + 16 * 4 + 3 * 4) + 3 * 64); /* the empty unit: headers */
    free(text);
    ckpt_meta_free(&back);
}
END_TEST

/* Replaces the first `from` in meta.json text with `to` and expects a parse error
 * containing `want`. */
static void check_rejected(const char *from, const char *to, const char *want)
{
    struct ckpt_meta m, back;
    struct ckpt_unit units[2];
    struct zero_error err = {0};
    char *text = NULL;
    sample_meta(&m, units);
    ck_assert_int_eq(ckpt_meta_write(&m, &text, &err), 0);
    char *at = strstr(text, from);
    ck_assert_msg(at != NULL, "'%s' not in meta.json", from);
    size_t n = strlen(text) + strlen(to) + 1;
    char *edited = malloc(n);
    snprintf(edited, n, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
    int rc = ckpt_meta_parse(&back, edited, strlen(edited), "ck/meta.json", &err);
    ck_assert_msg(rc != 0 && strstr(err.msg, want) && strstr(err.msg, "ck/meta.json"),
                  "%s -> %s: got \"%s\"", from, to, rc ? err.msg : "(accepted)");
    free(text);
    free(edited);
}

START_TEST(test_malformed_meta_json_is_rejected_naming_the_key)
{
    check_rejected("\"libzero-checkpoint\"", "\"other\"", "key format");
    check_rejected("\"format_version\": 1", "\"format_version\": 2", "format version 2");
    check_rejected("\"world_size\": 3", "\"world_size\": 2", "key units[0]");
    check_rejected("\"offset\": 16", "\"offset\": 8", "units[0].params[1].offset");
    check_rejected("\"numel\": 12", "\"numel\": 13", "units[0].params[0].numel");
    check_rejected("\"chunk_elements\": 7", "\"chunk_elements\": 0", "key chunk_elements");
    check_rejected("\"optim.exp_avg\"", "\"master\"", "key sections");
    check_rejected("\"applied_steps\": 10", "\"applied_steps\": 13", "counters.applied_steps");
    check_rejected("\"scale\": 65536.0", "\"scale\": -1.0", "loss_scaler.scale");
    check_rejected("\"precision\": \"fp16\"", "\"precision\": \"fp32\"", "key loss_scaler");
    struct ckpt_meta m;
    struct zero_error err = {0};
    ck_assert(ckpt_meta_parse(&m, "[1]", 3, "x/meta.json", &err) == ZERO_EFORMAT &&
              strstr(err.msg, "x/meta.json: not a JSON object"));
    check_rejected("\"stage\": 2", "\"stage\": 2, \"stage\": 1", "duplicate object key");
    check_rejected("\"checkpoint_id\": \"fedcba9876543210\"", "\"checkpoint_id\": \"xyz\"",
                   "key checkpoint_id");
    check_rejected("\"atom_order\": \"rank_major\"", "\"atom_order\": \"rank\"",
                   "key config.libzero.atom_order: unknown value");
    check_rejected("\"atom_order\": \"rank_major\"", "\"atom_order\": 1",
                   "key config.libzero.atom_order: expected a string");
}
END_TEST

/* The files of the first format-1 writers have no config.libzero.atom_order: they
 * trained with micro-step-major atoms, the only order there was. */
START_TEST(test_meta_json_without_atom_order_reads_as_micro_step_major)
{
    struct ckpt_meta m, back;
    struct ckpt_unit units[2];
    struct zero_error err = {0};
    char *text = NULL;
    sample_meta(&m, units);
    ck_assert_int_eq(ckpt_meta_write(&m, &text, &err), 0);
    char *key = strstr(text, "\"atom_order\"");
    ck_assert_ptr_nonnull(key);
    char *comma = key;
    while (comma > text && *comma != ',')
        comma--;
    char *end = strchr(key, '}'); /* the libzero object's end: the key was its last */
    ck_assert(*comma == ',' && end != NULL);
    memmove(comma, end, strlen(end) + 1);
    ck_assert_ptr_null(strstr(text, "atom_order"));
    ck_assert_msg(ckpt_meta_parse(&back, text, strlen(text), "old/meta.json", &err) == 0, "%s",
                  err.msg);
    ck_assert_int_eq(back.cfg.libzero.atom_order, ZERO_ATOM_MICRO_STEP_MAJOR);
    ck_assert_int_eq(back.format_version, 1);
    ck_assert(back.cfg.libzero.seed == m.cfg.libzero.seed); /* the rest of libzero intact */
    free(text);
    ckpt_meta_free(&back);
}
END_TEST

START_TEST(test_every_section_of_a_rank_file_has_a_fixed_position)
{
    ck_assert_int_eq(ckpt_section_bytes(0, 5), 64);
    ck_assert_int_eq(ckpt_section_bytes(5, 5), 64 + 20 + 4);
    ck_assert_int_eq(ckpt_section_bytes(6, 5), 64 + 24 + 8);
    unsigned char h[CKPT_HEADER_BYTES];
    ckpt_section_header(h, 3, CKPT_EXP_AVG, 96, 32, 7);
    ck_assert(memcmp(h, "ZSEC", 4) == 0 && ckpt_get_u32(h + 4) == 3 && ckpt_get_u64(h + 16) == 96 &&
              ckpt_get_u64(h + 24) == 32 && ckpt_get_u32(h + 60) == zero_crc32c(0, h, 60));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("checkpoint_format");
    TCase *t = tcase_create("format");
    tcase_add_test(t, test_crc32c_matches_rfc3720_vectors);
    tcase_add_test(t, test_meta_json_round_trips_exactly);
    tcase_add_test(t, test_malformed_meta_json_is_rejected_naming_the_key);
    tcase_add_test(t, test_meta_json_without_atom_order_reads_as_micro_step_major);
    tcase_add_test(t, test_every_section_of_a_rank_file_has_a_fixed_position);
    suite_add_tcase(s, t);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
