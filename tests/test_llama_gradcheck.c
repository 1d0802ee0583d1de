/* The Llama units against plain float64 math: the decoder layer (RMSNorm, rotary
 * embedding with and without llama3 scaling, grouped-query attention at group sizes
 * 1, 2 and all heads, the SwiGLU MLP, with and without biases), model.norm and the
 * the head (lm_head with its own weight, or model.norm + the tied embedding). Each unit's fp32
 * forward must match a reference written here without the backend, and each hand-written gradient
 * (every parameter, the tied embedding, dx) must match central finite differences of it
 * (gradcheck_rig.h). Also: the tensor enumeration names and shapes every parameter as
 * Hugging Face does and points at the unit and slot that hold it; num_parameters
 * counts a tied head once; bad configs are refused naming the key. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gradcheck_rig.h"
#include "zero/llama.h"

struct ref_args {
    int64_t rows, T;
    const struct zero_llama_config *c;
    const struct zero_unit *u; /* the unit, for its parameter slots by name */
    double *const *p;
    const double *x;
    const int32_t *labels;
};

/* The parameter called name in a's unit (NULL where the unit has none). */
static const double *P(const struct ref_args *a, const char *name)
{
    for (int i = 0; i < a->u->nparams; i++)
        if (strcmp(a->u->params[i].name, name) == 0)
            return a->p[i];
    return NULL;
}

/* y (rows, out) = x (rows, in) W^T + b, W (out, in) as torch.nn.Linear */
static void ref_linear(const double *x, const double *w, const double *b, double *y, int64_t rows,
                       int64_t in, int64_t out)
{
    for (int64_t r = 0; r < rows; r++)
        for (int64_t o = 0; o < out; o++) {
            double s = b != NULL ? b[o] : 0.0;
            for (int64_t k = 0; k < in; k++)
                s += x[r * in + k] * w[o * in + k];
            y[r * out + o] = s;
        }
}

static void ref_rmsnorm(const double *x, const double *w, double *y, int64_t rows, int64_t C,
                        double eps)
{
    for (int64_t r = 0; r < rows; r++) {
        double ss = 0.0;
        for (int64_t c = 0; c < C; c++)
            ss += x[r * C + c] * x[r * C + c];
        const double s = 1.0 / sqrt(ss / (double)C + eps);
        for (int64_t c = 0; c < C; c++)
            y[r * C + c] = x[r * C + c] * s * w[c];
    }
}

/* Hugging Face's inverse frequencies (_compute_default / _compute_llama3_parameters) */
static double ref_inv_freq(const struct zero_llama_config *c, int64_t i)
{
    const double D = (double)c->head_dim;
    double inv = 1.0 / pow(c->rope_theta, (double)(2 * i) / D);
    if (c->rope_scaling.type != ZERO_ROPE_SCALING_LLAMA3)
        return inv;
    const double old = (double)c->rope_scaling.original_max_position_embeddings;
    const double lo = c->rope_scaling.low_freq_factor, hi = c->rope_scaling.high_freq_factor;
    const double f = c->rope_scaling.factor, wavelen = 2.0 * M_PI / inv;
    if (wavelen > old / lo)
        return inv / f;
    if (wavelen < old / hi)
        return inv;
    const double smooth = (old / wavelen - lo) / (hi - lo);
    return (1.0 - smooth) * inv / f + smooth * inv;
}

/* x (rows, heads * D) rotated in place, rotate_half's pairing, position r % T */
static void ref_rope(const struct zero_llama_config *c, double *x, int64_t rows, int64_t T,
                     int64_t heads)
{
    const int64_t D = c->head_dim, half = D / 2;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t h = 0; h < heads; h++)
            for (int64_t i = 0; i < half; i++) {
                const double ang = (double)(r % T) * ref_inv_freq(c, i);
                double *lo = x + (r * heads + h) * D + i, *hi = lo + half;
                const double a = *lo, b = *hi;
                *lo = a * cos(ang) - b * sin(ang);
                *hi = b * cos(ang) + a * sin(ang);
            }
}

/* one decoder layer in float64 (LlamaDecoderLayer.forward) */
static void ref_block(const struct ref_args *a, double *y)
{
    const struct zero_llama_config *c = a->c;
    const int64_t rows = a->rows, T = a->T, C = c->hidden_size, I = c->intermediate_size;
    const int64_t H = c->num_attention_heads, KV = c->num_key_value_heads, D = c->head_dim;
    const int64_t G = H / KV;
    double *n1 = calloc((size_t)(rows * C), sizeof(double));
    double *q = calloc((size_t)(rows * H * D), sizeof(double));
    double *k = calloc((size_t)(rows * KV * D), sizeof(double));
    double *v = calloc((size_t)(rows * KV * D), sizeof(double));
    double *o = calloc((size_t)(rows * H * D), sizeof(double));
    double *h = calloc((size_t)(rows * C), sizeof(double));
    double *g = calloc((size_t)(rows * I), sizeof(double));
    double *up = calloc((size_t)(rows * I), sizeof(double));
    double *s = calloc((size_t)T, sizeof(double));
    ref_rmsnorm(a->x, P(a, "input_layernorm.weight"), n1, rows, C, c->rms_norm_eps);
    ref_linear(n1, P(a, "self_attn.q_proj.weight"), P(a, "self_attn.q_proj.bias"), q, rows, C,
               H * D);
    ref_linear(n1, P(a, "self_attn.k_proj.weight"), P(a, "self_attn.k_proj.bias"), k, rows, C,
               KV * D);
    ref_linear(n1, P(a, "self_attn.v_proj.weight"), P(a, "self_attn.v_proj.bias"), v, rows, C,
               KV * D);
    ref_rope(c, q, rows, T, H);
    ref_rope(c, k, rows, T, KV);
    for (int64_t b = 0; b < rows / T; b++)
        for (int64_t hh = 0; hh < H; hh++)
            for (int64_t i = 0; i < T; i++) {
                const double *qi = q + ((b * T + i) * H + hh) * D;
                double mx = -INFINITY, sum = 0.0;
                for (int64_t j = 0; j <= i; j++) {
                    const double *kj = k + ((b * T + j) * KV + hh / G) * D;
                    double dot = 0.0;
                    for (int64_t d = 0; d < D; d++)
                        dot += qi[d] * kj[d];
                    s[j] = dot / sqrt((double)D);
                    mx = s[j] > mx ? s[j] : mx;
                }
                for (int64_t j = 0; j <= i; j++)
                    sum += (s[j] = exp(s[j] - mx));
                double *oi = o + ((b * T + i) * H + hh) * D;
                for (int64_t j = 0; j <= i; j++)
                    for (int64_t d = 0; d < D; d++)
                        oi[d] += s[j] / sum * v[((b * T + j) * KV + hh / G) * D + d];
            }
    ref_linear(o, P(a, "self_attn.o_proj.weight"), P(a, "self_attn.o_proj.bias"), h, rows, H * D,
               C);
    for (int64_t i = 0; i < rows * C; i++)
        h[i] += a->x[i];
    ref_rmsnorm(h, P(a, "post_attention_layernorm.weight"), n1, rows, C, c->rms_norm_eps);
    ref_linear(n1, P(a, "mlp.gate_proj.weight"), P(a, "mlp.gate_proj.bias"), g, rows, C, I);
    ref_linear(n1, P(a, "mlp.up_proj.weight"), P(a, "mlp.up_proj.bias"), up, rows, C, I);
    for (int64_t i = 0; i < rows * I; i++)
        g[i] = g[i] / (1.0 + exp(-g[i])) * up[i];
    ref_linear(g, P(a, "mlp.down_proj.weight"), P(a, "mlp.down_proj.bias"), y, rows, I, C);
    for (int64_t i = 0; i < rows * C; i++)
        y[i] += h[i];
    free(n1), free(q), free(k), free(v), free(o), free(h), free(g), free(up), free(s);
}

static void ref_norm(const struct ref_args *a, double *y)
{
    ref_rmsnorm(a->x, a->p[0], y, a->rows, a->c->hidden_size, a->c->rms_norm_eps);
}

/* per-row cross-entropy of h W^T, W (V, C) */
static void ref_xent(const struct ref_args *a, const double *h, const double *w, double *y)
{
    const int64_t C = a->c->hidden_size, V = a->c->vocab_size;
    double *logits = calloc((size_t)V, sizeof(double));
    for (int64_t r = 0; r < a->rows; r++) {
        ref_linear(h + r * C, w, NULL, logits, 1, C, V);
        double mx = -INFINITY, sum = 0.0;
        for (int64_t v = 0; v < V; v++)
            mx = logits[v] > mx ? logits[v] : mx;
        for (int64_t v = 0; v < V; v++)
            sum += exp(logits[v] - mx);
        y[r] = log(sum) + mx - logits[a->labels[r]];
    }
    free(logits);
}

/* the untied lm_head: its own weight, slot 0 */
static void ref_head(const struct ref_args *a, double *y)
{
    ref_xent(a, a->x, a->p[0], y);
}

/* the tied head: model.norm (slot 0), then the embedding's weight (slot 1) */
static void ref_tied_head(const struct ref_args *a, double *y)
{
    const int64_t n = a->rows * a->c->hidden_size;
    double *h = calloc((size_t)n, sizeof(double));
    ref_rmsnorm(a->x, a->p[0], h, a->rows, a->c->hidden_size, a->c->rms_norm_eps);
    ref_xent(a, h, a->p[1], y);
    free(h);
}

static void must(int rc, const struct zero_error *err)
{
    ck_assert_msg(rc == ZERO_OK, "%s", err->msg);
}

/* A tiny config: C 8, I 12, H 4 heads of D 4 (so H*D != C is exercised), kv heads kv. */
static struct zero_llama_config tiny(int kv)
{
    struct zero_llama_config c;
    zero_llama_config_default(&c);
    c.vocab_size = 11, c.hidden_size = 8, c.intermediate_size = 12, c.num_hidden_layers = 2;
    c.num_attention_heads = 4, c.num_key_value_heads = kv, c.head_dim = 4;
    c.max_position_embeddings = 16, c.rms_norm_eps = 1e-5, c.rope_theta = 10000.0;
    return c;
}

/* Unit `unit` of the model c builds, taken out of it (the caller destroys it). */
static struct zero_unit *take_unit(const struct zero_llama_config *c, int64_t T, int unit)
{
    struct zero_model *m;
    struct zero_error err = {0};
    must(zero_nn_build_llama(&m, c, &(struct zero_llama_build){.block_size = T}, &err), &err);
    struct zero_unit *u = m->units[unit];
    m->units[unit] = NULL;
    zero_model_destroy(m);
    return u;
}

/* The whole specification for one unit of c (gradcheck_rig.h). */
static void check_unit(const struct zero_llama_config *c, int unit, ref_forward_fn ref,
                       uint64_t seed)
{
    const int64_t T = 3, rows = 2 * T;
    struct zero_unit *u = take_unit(c, T, unit);
    rig_seed(seed);
    int32_t *labels = rig_xmalloc((size_t)rows * sizeof(int32_t));
    for (int64_t i = 0; i < rows; i++)
        labels[i] = (int32_t)((i * 7 + 3) % c->vocab_size);
    const int64_t wte_len = c->vocab_size * c->hidden_size;
    struct rig g;
    rig_open(&g, u, rows,
             &(struct rig_inputs){.x_range = 1.0, .external_len = &wte_len, .labels = labels});
    const struct ref_args a = {
        .rows = rows, .T = T, .c = c, .u = u, .p = g.pd, .x = g.xd, .labels = labels};
    rig_check_unit(&g, ref, &a, 1e-5);
    free(labels);
    rig_close(&g);
}

START_TEST(test_layer_with_gqa_group_2_matches_reference_and_finite_differences)
{
    struct zero_llama_config c = tiny(2);
    check_unit(&c, 1, ref_block, 41);
}
END_TEST

START_TEST(test_layer_with_mha_group_1_matches_reference)
{
    struct zero_llama_config c = tiny(4);
    check_unit(&c, 1, ref_block, 42);
}
END_TEST

START_TEST(test_layer_with_mqa_one_kv_head_matches_reference)
{
    struct zero_llama_config c = tiny(1);
    check_unit(&c, 2, ref_block, 43);
}
END_TEST

START_TEST(test_layer_with_llama3_rope_scaling_and_biases_matches_reference)
{
    struct zero_llama_config c = tiny(2);
    /* original context 4: wavelengths of the 2 pairs (2 pi, 200 pi) straddle the band */
    c.rope_theta = 100.0;
    c.rope_scaling.type = ZERO_ROPE_SCALING_LLAMA3;
    c.rope_scaling.factor = 8.0, c.rope_scaling.low_freq_factor = 0.02;
    c.rope_scaling.high_freq_factor = 1.0, c.rope_scaling.original_max_position_embeddings = 4;
    c.attention_bias = 1, c.mlp_bias = 1;
    ck_assert(ref_inv_freq(&c, 1) != 1.0 / pow(100.0, 0.5)); /* the scaling is exercised */
    check_unit(&c, 1, ref_block, 44);
}
END_TEST

START_TEST(test_model_norm_matches_reference)
{
    struct zero_llama_config c = tiny(2);
    check_unit(&c, 1 + c.num_hidden_layers, ref_norm, 45);
}
END_TEST

START_TEST(test_untied_and_tied_lm_head_match_reference)
{
    struct zero_llama_config c = tiny(2);
    check_unit(&c, 2 + c.num_hidden_layers, ref_head, 46);
    /* tied: model.norm and the head are one unit holding the norm's weight, as GPT-2's
     * ln_f, so no unit is without parameters */
    c.tie_word_embeddings = 1;
    struct zero_unit *u = take_unit(&c, 3, 1 + c.num_hidden_layers);
    ck_assert_str_eq(u->name, "model.norm");
    ck_assert_int_eq(u->nparams, 1);
    ck_assert_int_eq(u->nexternal, 1);
    ck_assert_int_eq(u->external[0].unit, 0);
    ck_assert(u->is_loss);
    zero_unit_destroy(u);
    check_unit(&c, 1 + c.num_hidden_layers, ref_tied_head, 47);
}
END_TEST

/* every tensor: the Hugging Face name, its shape, and the unit and slot holding it */
START_TEST(test_tensor_enumeration_is_hugging_face_names_and_shapes)
{
    for (int variant = 0; variant < 4; variant++) {
        struct zero_llama_config c = tiny(2);
        c.attention_bias = variant & 1, c.mlp_bias = (variant >> 1) & 1;
        c.tie_word_embeddings = variant == 3;
        struct zero_model *m;
        struct zero_error err = {0};
        must(zero_nn_build_llama(&m, &c, &(struct zero_llama_build){.block_size = 4}, &err), &err);
        const int n = zero_llama_tensor_count(&c);
        int64_t total = 0, params = 0;
        for (int u = 0; u < m->nunits; u++)
            params += m->units[u]->nparams;
        ck_assert_int_eq(n, params); /* every owned parameter once */
        for (int i = 0; i < n; i++) {
            struct zero_llama_tensor t;
            must(zero_llama_tensor(&c, i, &t, &err), &err);
            const struct zero_unit *u = m->units[t.unit];
            const struct zero_param_spec *p = &u->params[t.param];
            char full[2 * ZERO_NAME_LEN];
            snprintf(full, sizeof full, "%s.%s", u->name, p->name);
            ck_assert_str_eq(full, t.name);
            ck_assert_int_eq(p->ndim, t.ndim);
            for (int dd = 0; dd < t.ndim; dd++)
                ck_assert_int_eq(p->shape[dd], t.shape[dd]);
            total += zero_param_numel(p);
        }
        ck_assert_int_eq(total, zero_llama_num_parameters(&c));
        ck_assert_int_eq(total, zero_model_numel(m));
        struct zero_llama_tensor t;
        must(zero_llama_tensor(&c, 1, &t, &err), &err);
        ck_assert_str_eq(t.name, "model.layers.0.self_attn.q_proj.weight");
        ck_assert_int_eq(t.shape[0], 16); /* [out, in]: H*D = 16, C = 8 */
        ck_assert_int_eq(t.shape[1], 8);
        must(zero_llama_tensor(&c, n - 1, &t, &err), &err);
        ck_assert_str_eq(t.name, variant == 3 ? "model.norm.weight" : "lm_head.weight");
        ck_assert_int_eq(zero_llama_tensor(&c, n, &t, &err), ZERO_EINVAL);
        zero_model_destroy(m);
    }
    /* SmolLM2-135M's shape: transformers' num_parameters() is 134515008 (tied) */
    struct zero_llama_config s = tiny(3);
    s.vocab_size = 49152, s.hidden_size = 576, s.intermediate_size = 1536;
    s.num_hidden_layers = 30, s.num_attention_heads = 9, s.head_dim = 64;
    s.tie_word_embeddings = 1;
    ck_assert_int_eq(zero_llama_num_parameters(&s), 134515008);
}
END_TEST

START_TEST(test_bad_configs_are_refused_naming_the_key)
{
    struct zero_error err = {0};
    struct zero_model *m = NULL;
    const struct zero_llama_build b = {.block_size = 4};
    struct zero_llama_config c = tiny(3); /* 3 does not divide 4 heads */
    ck_assert_int_eq(zero_nn_build_llama(&m, &c, &b, &err), ZERO_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "num_key_value_heads"));
    c = tiny(2), c.head_dim = 3;
    ck_assert_int_eq(zero_nn_build_llama(&m, &c, &b, &err), ZERO_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "head_dim"));
    c = tiny(2), c.rope_scaling.type = ZERO_ROPE_SCALING_LLAMA3, c.rope_scaling.factor = 8.0;
    c.rope_scaling.low_freq_factor = 4.0, c.rope_scaling.high_freq_factor = 1.0;
    c.rope_scaling.original_max_position_embeddings = 8192;
    ck_assert_int_eq(zero_nn_build_llama(&m, &c, &b, &err), ZERO_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "rope_scaling.high_freq_factor"));
    c = tiny(2);
    ck_assert_int_eq(
        zero_nn_build_llama(&m, &c, &(struct zero_llama_build){.block_size = 17}, &err),
        ZERO_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "max_position_embeddings"));
    ck_assert_ptr_null(m);
}
END_TEST

static Suite *gradcheck_suite(void)
{
    Suite *s = suite_create("llama_gradcheck");
    TCase *tc = tcase_create("layers");
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, test_layer_with_gqa_group_2_matches_reference_and_finite_differences);
    tcase_add_test(tc, test_layer_with_mha_group_1_matches_reference);
    tcase_add_test(tc, test_layer_with_mqa_one_kv_head_matches_reference);
    tcase_add_test(tc, test_layer_with_llama3_rope_scaling_and_biases_matches_reference);
    tcase_add_test(tc, test_model_norm_matches_reference);
    tcase_add_test(tc, test_untied_and_tied_lm_head_match_reference);
    tcase_add_test(tc, test_tensor_enumeration_is_hugging_face_names_and_shapes);
    tcase_add_test(tc, test_bad_configs_are_refused_naming_the_key);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    return rig_main(argc, argv, "test_llama_gradcheck", gradcheck_suite);
}
