/* ZeRO-Offload: the fp32 master and the optimizer state in host memory, updated
 * by the host optimizer; with offload_param the stage-3 parameter shard too.
 *
 *   - every instruction-set variant of the host optimizer gives the baseline's
 *     bits (Adam, AdamW, SGD; fp32/fp16/bf16 gradients and copies), also when
 *     the copy overwrites the gradient, as the offload path does; every variant
 *     gives the element formula's bits written out in scalar code, on zeros,
 *     subnormals, infinities and NaNs;
 *   - offloaded training gives the same bits as training without offload, in
 *     stages 1-3, fp32 and mixed precision, with accumulation and clipping;
 *   - the device ledger loses exactly the offloaded states and the host ledger
 *     holds them, as the theory says (14Ψ/N on the host in mixed precision);
 *   - configurations offload cannot honour fail with the key's name. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine_harness.h"
#include "base/host_optim.h"
#include "base/host_parallel.h"
#include "mpi_check.h"
#include "zero/dtype.h"

/* ---- the host optimizer's variants ---- */

static float val(uint32_t i, uint32_t seed)
{
    uint32_t x = i * 2654435761u + seed * 40503u + 12345u;
    x ^= x >> 15;
    x *= 2246822519u;
    x ^= x >> 13;
    return (float)(x & 0xffffff) / (float)0x800000 - 1.0f;
}

/* n values of type t (scaled), in fresh memory */
static void *filled(size_t n, enum zero_dtype t, uint32_t seed, float scale)
{
    void *x = malloc(n * 4 + 4);
    ck_assert_ptr_nonnull(x);
    for (size_t i = 0; i < n; i++) {
        float v = scale * val((uint32_t)i, seed);
        if (t == ZERO_F32)
            ((float *)x)[i] = v;
        else
            ((uint16_t *)x)[i] = t == ZERO_F16 ? zero_f32_to_f16(v) : zero_f32_to_bf16(v);
    }
    return x;
}

struct state {
    float *p, *m, *v;
    void *g, *copy;
};

static void state_init(struct state *s, size_t n, enum zero_dtype gt)
{
    s->p = filled(n, ZERO_F32, 1, 1.0f);
    s->m = filled(n, ZERO_F32, 2, 0.01f);
    s->v = filled(n, ZERO_F32, 3, 0.01f);
    for (size_t i = 0; i < n; i++)
        s->v[i] = fabsf(s->v[i]);
    s->g = filled(n, gt, 4, 3.0f);
    s->copy = calloc(n, 4);
}

static void state_free(struct state *s)
{
    free(s->p);
    free(s->m);
    free(s->v);
    free(s->g);
    free(s->copy);
}

static int same(const void *a, const void *b, size_t bytes)
{
    return memcmp(a, b, bytes) == 0;
}

/* One update of a fresh state by isa (in_place: the copy overwrites g). */
static void update(struct state *s, enum zero_host_isa isa, int sgd, int adamw, size_t n,
                   enum zero_dtype gt, enum zero_dtype ct, int in_place)
{
    void *copy = in_place ? s->g : s->copy;
    if (sgd) {
        struct zero_sgd_args a = {.lr = 0.1f,
                                  .momentum = 0.9f,
                                  .dampening = 0.0f,
                                  .weight_decay = 0.01f,
                                  .nesterov = 1,
                                  .step = 2,
                                  .grad_div = 3.0f};
        zero_host_sgd(isa, &a, s->p, s->g, gt, s->m, n, copy, ct);
    } else {
        struct zero_adam_args a = {.lr = 1e-3f,
                                   .beta1 = 0.9f,
                                   .beta2 = 0.999f,
                                   .eps = 1e-8f,
                                   .weight_decay = 0.01f,
                                   .step = 3,
                                   .adamw = adamw,
                                   .bias_correction = 1,
                                   .grad_div = 3.0f};
        struct zero_adam_consts k;
        char why[128];
        ck_assert_int_eq(zero_adam_prepare(&a, &k, why, sizeof why), 0);
        zero_host_adam(isa, &k, s->p, s->g, gt, s->m, s->v, n, copy, ct);
    }
}

START_TEST(test_every_isa_variant_gives_the_baseline_bits)
{
    const enum zero_dtype types[3] = {ZERO_F32, ZERO_F16, ZERO_BF16};
    const size_t n = 5000; /* two whole chunks and a ragged one */
    int compared = 0;
    for (int isa = ZERO_ISA_BASE; isa < ZERO_ISA_COUNT; isa++) {
        if (!zero_host_isa_supported(isa))
            continue;
        for (int algo = 0; algo < 3; algo++)
            for (int gi = 0; gi < 3; gi++)
                for (int ci = 0; ci < 3; ci++) {
                    enum zero_dtype gt = types[gi], ct = types[ci];
                    if (zero_dtype_size(ct) > zero_dtype_size(gt))
                        continue; /* a copy is never wider than the gradient in place */
                    struct state ref, got, inpl;
                    state_init(&ref, n, gt);
                    state_init(&got, n, gt);
                    state_init(&inpl, n, gt);
                    update(&ref, ZERO_ISA_BASE, algo == 2, algo == 1, n, gt, ct, 0);
                    update(&got, isa, algo == 2, algo == 1, n, gt, ct, 0);
                    update(&inpl, isa, algo == 2, algo == 1, n, gt, ct, 1);
                    size_t cb = n * zero_dtype_size(ct);
                    ck_assert_msg(same(ref.p, got.p, n * 4) && same(ref.m, got.m, n * 4) &&
                                      same(ref.v, got.v, n * 4) && same(ref.copy, got.copy, cb),
                                  "%s differs from base (algo %d, grad %s, copy %s)",
                                  zero_host_isa_name(isa), algo, zero_dtype_name(gt),
                                  zero_dtype_name(ct));
                    ck_assert_msg(same(ref.p, inpl.p, n * 4) && same(ref.copy, inpl.g, cb),
                                  "%s in place differs (algo %d, grad %s, copy %s)",
                                  zero_host_isa_name(isa), algo, zero_dtype_name(gt),
                                  zero_dtype_name(ct));
                    state_free(&ref);
                    state_free(&got);
                    state_free(&inpl);
                    compared++;
                }
    }
    ck_assert_int_gt(compared, 0);
}
END_TEST

/* The special values an update meets: zeros of both signs, the smallest subnormal
 * and the largest, the smallest normal, the largest finite, infinities, quiet and
 * signalling NaNs with payloads, halfway cases of bf16 and fp16 rounding */
static const uint32_t specials[] = {
    0x00000000, 0x80000000, 0x00000001, 0x807fffff, 0x00800000, 0x7f7fffff, 0xff7fffff,
    0x7f800000, 0xff800000, 0x7fc00000, 0xffc12345, 0x7f800001, 0xff80ffff, 0x3f808000,
    0x3f818000, 0x477ff000, 0x33000000, 0x387fe000, 0x3f800000, 0xbf7fffff,
};
#define NSPECIALS (sizeof specials / sizeof specials[0])

static float f32_of_bits(uint32_t x)
{
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}

/* element i of a test array: a special value at every 7th index, else val() */
static float value_at(size_t i, uint32_t seed, float scale)
{
    if (i % 7 == seed % 7)
        return f32_of_bits(specials[(i / 7 + seed) % NSPECIALS]);
    return scale * val((uint32_t)i, seed);
}

/* bf16 and fp16 NaNs compared as NaNs, everything else as bits: a NaN's payload
 * where two NaNs meet in a product is the compiler's operand order */
static int same_value(uint32_t a, uint32_t b, enum zero_dtype t)
{
    if (t == ZERO_F32)
        return a == b || (isnan(f32_of_bits(a)) && isnan(f32_of_bits(b)));
    float fa = t == ZERO_BF16 ? zero_bf16_to_f32((uint16_t)a) : zero_f16_to_f32((uint16_t)a);
    float fb = t == ZERO_BF16 ? zero_bf16_to_f32((uint16_t)b) : zero_f16_to_f32((uint16_t)b);
    return a == b || (isnan(fa) && isnan(fb));
}

START_TEST(test_every_isa_variant_matches_the_scalar_adam_formula_on_special_values)
{
    /* The element formula of host_optim.c spelled out one element at a time, with
     * the narrowing by dtype.c's exported conversion: the vector loops (their
     * fused widening and narrowing, their selections) must give these bits for
     * zeros, subnormals, infinities and NaNs in every state, and in the copy */
    const size_t n = 3000;
    const enum zero_dtype gts[3] = {ZERO_F32, ZERO_BF16, ZERO_F16};
    const float wds[2] = {0.0f, 0.01f};
    int compared = 0;
    for (int isa = ZERO_ISA_BASE; isa < ZERO_ISA_COUNT; isa++) {
        if (!zero_host_isa_supported(isa))
            continue;
        for (int gi = 0; gi < 3; gi++)
            for (int adamw = 0; adamw < 2; adamw++)
                for (int w = 0; w < 2; w++) {
                    enum zero_dtype gt = gts[gi], ct = gt == ZERO_F32 ? ZERO_BF16 : gt;
                    struct zero_adam_args a = {.lr = 1e-3f,
                                               .beta1 = 0.9f,
                                               .beta2 = 0.999f,
                                               .eps = 1e-8f,
                                               .weight_decay = wds[w],
                                               .step = 3,
                                               .adamw = adamw,
                                               .bias_correction = 1,
                                               .grad_div = 3.0f};
                    struct zero_adam_consts k;
                    char why[128];
                    ck_assert_int_eq(zero_adam_prepare(&a, &k, why, sizeof why), 0);
                    float *p = malloc(n * 4), *m = malloc(n * 4), *v = malloc(n * 4);
                    void *g = malloc(n * 4);
                    uint16_t *copy = calloc(n, 2);
                    ck_assert(p && m && v && g && copy);
                    for (size_t i = 0; i < n; i++) {
                        p[i] = value_at(i, 1, 1.0f);
                        m[i] = value_at(i, 2, 0.01f);
                        v[i] = fabsf(value_at(i, 3, 0.01f));
                        float gv = value_at(i, 4, 3.0f);
                        if (gt == ZERO_F32)
                            ((float *)g)[i] = gv;
                        else
                            ((uint16_t *)g)[i] =
                                gt == ZERO_BF16 ? zero_f32_to_bf16(gv) : zero_f32_to_f16(gv);
                    }
                    float *p0 = malloc(n * 4), *m0 = malloc(n * 4), *v0 = malloc(n * 4);
                    ck_assert(p0 && m0 && v0);
                    memcpy(p0, p, n * 4);
                    memcpy(m0, m, n * 4);
                    memcpy(v0, v, n * 4);
                    zero_host_adam(isa, &k, p, g, gt, m, v, n, copy, ct);
                    for (size_t i = 0; i < n; i++) {
                        float gv = gt == ZERO_F32    ? ((float *)g)[i]
                                   : gt == ZERO_BF16 ? zero_bf16_to_f32(((uint16_t *)g)[i])
                                                     : zero_f16_to_f32(((uint16_t *)g)[i]);
                        float gg = gv / k.grad_div, pp = p0[i];
                        if (k.l2 != 0.0f)
                            gg = gg + k.l2 * pp;
                        if (k.decay != 0.0f)
                            pp = pp - k.decay * pp;
                        float mt = k.beta1 * m0[i] + k.one_minus_beta1 * gg;
                        float vt = k.beta2 * v0[i] + k.one_minus_beta2 * gg * gg;
                        pp = pp - k.lr * ((mt / k.bias_correction1) /
                                          (sqrtf(vt / k.bias_correction2) + k.eps));
                        uint16_t want =
                            ct == ZERO_BF16 ? zero_f32_to_bf16(pp) : zero_f32_to_f16(pp);
                        uint32_t got_p, want_p;
                        memcpy(&got_p, &p[i], 4);
                        memcpy(&want_p, &pp, 4);
                        ck_assert_msg(same_value(got_p, want_p, ZERO_F32) &&
                                          same_value(copy[i], want, ct),
                                      "%s, grad %s, adamw %d, wd %g, element %zu: p 0x%08x copy "
                                      "0x%04x, the formula gives 0x%08x 0x%04x",
                                      zero_host_isa_name(isa), zero_dtype_name(gt), adamw,
                                      (double)wds[w], i, got_p, copy[i], want_p, want);
                    }
                    free(p);
                    free(m);
                    free(v);
                    free(g);
                    free(copy);
                    free(p0);
                    free(m0);
                    free(v0);
                    compared++;
                }
    }
    ck_assert_int_gt(compared, 0);
}
END_TEST

/* ---- the host threads ---- */

struct coverage {
    int *hits;
    size_t grain;
    int bad_start;
};

static void mark(void *arg, size_t begin, size_t end)
{
    struct coverage *c = arg;
    c->bad_start |= begin % c->grain != 0;
    for (size_t i = begin; i < end; i++)
        __atomic_add_fetch(&c->hits[i], 1, __ATOMIC_RELAXED);
}

START_TEST(test_parallel_for_covers_the_range_once_in_grain_aligned_ranges)
{
    const size_t sizes[] = {0, 1, 7, 100, 4096, 4097, 100003};
    const int threads[] = {1, 2, 3, 8, 300};
    for (size_t a = 0; a < sizeof sizes / sizeof sizes[0]; a++)
        for (size_t b = 0; b < sizeof threads / sizeof threads[0]; b++) {
            size_t n = sizes[a];
            struct coverage c = {.hits = calloc(n + 1, sizeof(int)), .grain = 64};
            host_parallel_for(n, c.grain, threads[b], mark, &c);
            for (size_t i = 0; i < n; i++)
                ck_assert_msg(c.hits[i] == 1, "n %zu, %d threads: element %zu done %d times", n,
                              threads[b], i, c.hits[i]);
            ck_assert(!c.bad_start);
            free(c.hits);
        }
    ck_assert_int_ge(host_processors(), 1);
}
END_TEST

/* ---- training ---- */

static int run_ok(struct harness_run *r)
{
    struct zero_error err = {0};
    int rc = harness_train(r, MPI_COMM_WORLD, &err);
    if (rc)
        fprintf(stderr, "rank %d: %s\n", mpi_check_rank(), err.msg);
    return mpi_check_all(rc == 0);
}

static void offload(struct harness_run *r, int param)
{
    r->cfg.zero_optimization.offload_optimizer.device = ZERO_OFFLOAD_CPU;
    r->cfg.zero_optimization.offload_param.device = param ? ZERO_OFFLOAD_CPU : ZERO_OFFLOAD_NONE;
}

static void check_same_bits(enum zero_dtype precision, int accum, double clip, int sgd)
{
    for (int stage = 1; stage <= 3; stage++)
        for (int param = 0; param <= (stage == 3); param++) {
            struct harness_run base, off;
            for (int i = 0; i < 2; i++) {
                struct harness_run *x = i ? &off : &base;
                harness_defaults(x, stage);
                x->precision = precision;
                x->steps = 4;
                x->cfg.gradient_accumulation_steps = accum;
                x->cfg.gradient_clipping = clip;
                if (sgd) {
                    x->cfg.optimizer.type = ZERO_OPTIM_SGD;
                    x->cfg.optimizer.momentum = 0.9;
                }
                x->cfg.zero_optimization.stage3_param_persistence_threshold = 100;
                if (i)
                    offload(x, param);
                ck_assert(run_ok(x));
            }
            ck_assert_msg(mpi_check_all(harness_same_bits(&base, &off)),
                          "%s stage %d offload_param %d: offloaded training differs "
                          "(accum %d, clip %g, %s)",
                          zero_dtype_name(precision), stage, param, accum, clip,
                          sgd ? "sgd" : "adamw");
            ck_assert(base.losses[0] != base.losses[3]); /* it trained */
            free(base.weights);
            free(off.weights);
        }
}

START_TEST(test_offloaded_training_is_bit_identical_fp32)
{
    check_same_bits(ZERO_F32, 1, 0.0, 0);
    check_same_bits(ZERO_F32, 2, 0.05, 1);
}
END_TEST

START_TEST(test_offloaded_training_is_bit_identical_mixed_precision)
{
    check_same_bits(ZERO_BF16, 3, 0.05, 0);
    check_same_bits(ZERO_F16, 1, 0.0, 0);
}
END_TEST

/* Units big enough to split over host threads: the split changes no bit. */
START_TEST(test_threaded_host_update_is_bit_identical)
{
    struct harness_run base, off;
    for (int i = 0; i < 2; i++) {
        struct harness_run *x = i ? &off : &base;
        harness_defaults(x, 2);
        x->hidden = 160; /* ~2e5 parameters per block: several 16 Ki grains per shard */
        x->layers = 2;
        x->precision = ZERO_BF16;
        if (i) {
            offload(x, 0);
            x->cfg.libzero.offload_threads = 3;
        }
        ck_assert(run_ok(x));
    }
    ck_assert_msg(mpi_check_all(harness_same_bits(&base, &off)),
                  "3 host threads: offloaded training differs");
    free(base.weights);
    free(off.weights);
}
END_TEST

START_TEST(test_ledgers_hold_the_offloaded_states_where_the_theory_puts_them)
{
    for (int p = 0; p < 2; p++)
        for (int stage = 1; stage <= 3; stage++)
            for (int param = 0; param <= (stage == 3); param++) {
                struct harness_run r;
                harness_defaults(&r, stage);
                r.precision = p ? ZERO_BF16 : ZERO_F32;
                r.steps = 1;
                offload(&r, param);
                ck_assert(run_ok(&r));
                const struct zero_ledger *d = &r.ledger_after_create;
                const struct zero_ledger *h = &r.host_ledger_after_create;
                int64_t n = mpi_check_size(), P = r.theory.psi_padded, shard = P / n;
                int64_t c = p ? 2 : 4;
                /* device: the compute-dtype parameters and gradients only */
                ck_assert_int_eq(d->current[ZERO_TAG_MASTER], 0);
                ck_assert_int_eq(d->current[ZERO_TAG_OPTIM], 0);
                ck_assert_int_eq(d->current[ZERO_TAG_PARAMS],
                                 param ? 0 : c * (stage == 3 ? shard : P));
                ck_assert_int_eq(d->current[ZERO_TAG_GRADS], c * (stage >= 2 ? shard : P));
                /* host: 4 + 8 + c bytes per element of the shard, + the parameter shard */
                ck_assert_int_eq(h->current[ZERO_TAG_MASTER], 4 * shard);
                ck_assert_int_eq(h->current[ZERO_TAG_OPTIM], 8 * shard);
                ck_assert_int_eq(h->current[ZERO_TAG_GRADS], c * shard);
                ck_assert_int_eq(h->current[ZERO_TAG_PARAMS], param ? c * shard : 0);
                ck_assert_int_eq(zero_ledger_model_states(d), r.theory.model_state_bytes);
                ck_assert_int_eq(zero_ledger_model_states(h), r.theory.host_state_bytes);
                ck_assert_int_eq(r.theory.host_state_bytes, (12 + c + (param ? c : 0)) * shard);
                free(r.weights);
            }
}
END_TEST

/* sub_group_size: the host optimizer steps in sub-groups of that many elements
 * (an optimizer event each), and the split changes no bit. */
struct optim_events {
    int count;
    int64_t elements, largest;
};

static void count_optim(void *user, const struct zero_event *ev)
{
    struct optim_events *o = user;
    if (ev->kind != ZERO_EV_OPTIMIZER)
        return;
    o->count++;
    o->elements += ev->elements;
    if (ev->elements > o->largest)
        o->largest = ev->elements;
}

static struct optim_events optimizer_events(int64_t sub_group_size)
{
    struct zero_error err = {0};
    struct zero_device *dev = NULL;
    struct zero_model *model = NULL;
    struct zero_engine *e = NULL;
    MPI_Comm comm = MPI_COMM_WORLD;
    struct zero_backend_options opt = {.coll_mode = ZERO_COLL_EXACT, .device = -1};
    struct zero_config cfg;
    zero_config_defaults(&cfg);
    cfg.train_micro_batch_size_per_gpu = 2;
    cfg.zero_optimization.stage = 2;
    cfg.zero_optimization.offload_optimizer.device = ZERO_OFFLOAD_CPU;
    cfg.zero_optimization.sub_group_size = sub_group_size;
    cfg.libzero.align = 32;
    struct optim_events o = {0};
    ck_assert_int_eq(zero_device_open(&dev, "cpu", &comm, &opt, &err), 0);
    ck_assert_int_eq(zero_nn_build_mlp(&model, 8, 1, 3, &err), 0);
    ck_assert_msg(mpi_check_all(zero_engine_create(&e, &cfg, model, dev, &err) == 0), "%s",
                  err.msg);
    zero_engine_set_observer(e, count_optim, &o);
    float x[16] = {0.5f, -0.25f, 1.0f, 0.0f, 0.75f, -1.0f, 0.25f, 0.5f};
    int32_t y[2] = {0, 2};
    struct zero_batch b = {.rows = 2, .inputs = x, .labels = y};
    ck_assert(mpi_check_all(zero_engine_forward(e, &b, NULL, &err) == 0 &&
                            zero_engine_backward(e, &err) == 0 &&
                            zero_engine_step(e, NULL, &err) == 0));
    zero_engine_destroy(e);
    zero_model_destroy(model);
    zero_device_close(dev);
    return o;
}

START_TEST(test_sub_group_size_splits_the_host_update_without_changing_a_bit)
{
    struct optim_events whole = optimizer_events(1000000000), parts = optimizer_events(50);
    ck_assert_int_eq(parts.elements, whole.elements);
    ck_assert_int_le(parts.largest, 50);
    ck_assert_int_gt(parts.count, whole.count);

    struct harness_run base, off;
    for (int i = 0; i < 2; i++) {
        struct harness_run *x = i ? &off : &base;
        harness_defaults(x, 2);
        x->hidden = 160;
        x->layers = 2;
        x->precision = ZERO_BF16;
        if (i) {
            offload(x, 0);
            x->cfg.libzero.offload_threads = 3;
            x->cfg.zero_optimization.sub_group_size = 40000; /* not a multiple of the grain */
        }
        ck_assert(run_ok(x));
    }
    ck_assert_msg(mpi_check_all(harness_same_bits(&base, &off)),
                  "sub_group_size 40000: offloaded training differs");
    free(base.weights);
    free(off.weights);
}
END_TEST

/* zero_engine_create's message for cfg, or "" */
static void create_error(const struct zero_config *cfg, char *msg, size_t len)
{
    struct zero_error err = {0};
    struct zero_device *dev = NULL;
    struct zero_model *model = NULL;
    struct zero_engine *e = NULL;
    MPI_Comm comm = MPI_COMM_WORLD;
    struct zero_backend_options opt = {.coll_mode = ZERO_COLL_EXACT, .device = -1};
    ck_assert_int_eq(zero_device_open(&dev, "cpu", &comm, &opt, &err), 0);
    ck_assert_int_eq(zero_nn_build_mlp(&model, 8, 1, 3, &err), 0);
    int rc = zero_engine_create(&e, cfg, model, dev, &err);
    snprintf(msg, len, "%s", rc ? err.msg : "");
    zero_engine_destroy(e);
    zero_model_destroy(model);
    zero_device_close(dev);
}

START_TEST(test_offload_the_stage_cannot_honour_names_the_key)
{
    static const struct {
        int stage, opt, param;
        const char *says;
    } cases[] = {
        {0, 1, 0, "zero_optimization.offload_optimizer.device = cpu needs stage 1, 2 or 3"},
        {2, 1, 1, "zero_optimization.offload_param.device = cpu needs stage 3 (stage is 2)"},
        {3, 0, 1, "needs offload_optimizer.device = cpu or nvme as well"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct zero_config cfg;
        zero_config_defaults(&cfg);
        cfg.train_micro_batch_size_per_gpu = 1;
        cfg.zero_optimization.stage = cases[i].stage;
        cfg.zero_optimization.offload_optimizer.device = cases[i].opt;
        cfg.zero_optimization.offload_param.device = cases[i].param;
        char msg[1024];
        create_error(&cfg, msg, sizeof msg);
        ck_assert_msg(strstr(msg, cases[i].says) != NULL, "case %zu: got '%s'", i, msg);
    }
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("offload");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_every_isa_variant_gives_the_baseline_bits);
    tcase_add_test(tc, test_every_isa_variant_matches_the_scalar_adam_formula_on_special_values);
    tcase_add_test(tc, test_parallel_for_covers_the_range_once_in_grain_aligned_ranges);
    tcase_add_test(tc, test_threaded_host_update_is_bit_identical);
    tcase_add_test(tc, test_sub_group_size_splits_the_host_update_without_changing_a_bit);
    tcase_add_test(tc, test_offloaded_training_is_bit_identical_fp32);
    tcase_add_test(tc, test_offloaded_training_is_bit_identical_mixed_precision);
    tcase_add_test(tc, test_ledgers_hold_the_offloaded_states_where_the_theory_puts_them);
    tcase_add_test(tc, test_offload_the_stage_cannot_honour_names_the_key);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    return mpi_check_main(&argc, &argv, make_suite);
}
