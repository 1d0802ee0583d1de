/* gemm through cuBLASLt: cublasLtMatmul with the algorithm cuBLASLt's heuristic picks
 * for the case, asked once per case and kept in a small plan cache.
 *
 * Row-major by the operand swap of cuda_blas.c: cuBLASLt's A is our B, its B is our A,
 * its (m, n) is our (n, m); C is input and output at once (D = C, same layout).
 *
 * CUBLAS_COMPUTE_32F with fp32 alpha and beta: fp32 inputs are multiplied in plain fp32
 * (TF32 would need CUBLAS_COMPUTE_32F_FAST_TF32), so results stay within rounding of
 * the cpu backend's; fp16 and bf16 inputs use the tensor cores with fp32 accumulation
 * and write C in their own type or in fp32.
 *
 * A plan is keyed by everything the heuristic sees: transposes, m, n, k, the leading
 * dimensions, the types, and the alignment of the three pointers. cuBLASLt assumes
 * 256-byte aligned buffers unless told otherwise, and a kernel chosen under that
 * assumption faults on a shard or a column block that starts mid-allocation, so the
 * actual alignment goes into the preference and the key. A plan holds the descriptors
 * and the algorithm; a case without any algorithm is kept too, so that cuda_gemm goes
 * straight to cublasGemmEx next time without asking the heuristic again.
 *
 * Epilogues (cuda_lt_gemm_epilogue): the bias, the bias and GPT-2's tanh GELU with the
 * pre-activation kept as the auxiliary output, or GELU's derivative at a saved
 * pre-activation (DGELU), applied as C is written, or the bias gradient (BGRADA /
 * BGRADB: the sums of one operand over k, written to the bias pointer); the epilogue,
 * the alignment of the bias and auxiliary pointers and the auxiliary's type are part of
 * the key, and the pointers are set on the plan's descriptor before each call (the
 * heuristic reads their alignment, never their contents). D may be 16-bit (stored
 * activations, as llm.c writes its bf16 D and pre-GELU aux): C then has D's layout and
 * type (beta 0: never read); the bias stays fp32, which cuBLASLt may refuse for a
 * 16-bit D (the header makes the bias D's type by default): the caller's fallback then
 * runs.
 *
 * The workspace (32 MiB, what NVIDIA suggests for Hopper) is allocated once at open
 * through the backend's buffer helper, so the ledger shows it under workspace. Every
 * matmul runs on the compute stream, so one workspace serves them all. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_ops.h"
#include "zero/knobs.h"

#define LT_WORKSPACE_BYTES ((size_t)32 << 20)
#define LT_MAX_PLANS 512 /* past this the cache starts over: training has a few dozen cases */

/* Everything the heuristic depends on; compared with memcmp (no padding). */
struct lt_key {
    int64_t m, n, k, lda, ldb, ldc;    /* our row-major view */
    int32_t trans_a, trans_b, ab, c;   /* ab, c: cudaDataType_t */
    int32_t align_a, align_b, align_c; /* bytes, a power of two <= 256 */
    int32_t epilogue;                  /* cublasLtEpilogue_t; CUBLASLT_EPILOGUE_DEFAULT: none */
    int32_t align_bias, align_aux;     /* bytes, as above; 0 without the epilogue */
    int32_t aux_type;                  /* cudaDataType_t of aux; -1: D's (cuBLASLt's default) */
    int32_t unused;                    /* 0: keeps the key free of padding */
};

_Static_assert(sizeof(struct lt_key) == 6 * 8 + 12 * 4, "lt_key has no padding");

struct lt_plan {
    struct lt_key key;
    uint64_t hash;
    int usable; /* 0: cuBLASLt has no algorithm here (cublasGemmEx) */
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t la, lb, lc; /* cuBLASLt's A (our B), B (our A), C = D */
    cublasLtMatmulAlgo_t algo;
};

struct cuda_lt_cache {
    struct lt_plan *plan; /* (n) in insertion order */
    size_t n, cap;
};

static uint64_t key_hash(const struct lt_key *k)
{
    const unsigned char *p = (const unsigned char *)k;
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
    for (size_t i = 0; i < sizeof(*k); i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

/* The largest power of two <= 256 that divides the address. */
static int32_t alignment(const void *p)
{
    uintptr_t x = (uintptr_t)p, low = x & (~x + 1);
    return low == 0 || low > 256 ? 256 : (int32_t)low;
}

static void plan_destroy(struct lt_plan *p)
{
    if (p->lc != NULL)
        cublasLtMatrixLayoutDestroy(p->lc);
    if (p->lb != NULL)
        cublasLtMatrixLayoutDestroy(p->lb);
    if (p->la != NULL)
        cublasLtMatrixLayoutDestroy(p->la);
    if (p->op != NULL)
        cublasLtMatmulDescDestroy(p->op);
    memset(p, 0, sizeof(*p));
}

static void plans_clear(struct cuda_lt_cache *c)
{
    for (size_t i = 0; i < c->n; i++)
        plan_destroy(&c->plan[i]);
    c->n = 0;
}

/* The epilogue's attributes on p->op: its kind, the fp32 bias and its pointer (when
 * there is one), the pre-activation's leading dimension and pointer (GELU_AUX_BIAS
 * writes it, DGELU reads it; NULL for the bias alone). */
static cublasStatus_t set_epilogue(const struct lt_plan *p, const void *bias, const void *aux)
{
    const struct lt_key *k = &p->key;
    const uint32_t epi = (uint32_t)k->epilogue;
    const int32_t bias_type = CUDA_R_32F;
    const int64_t aux_ld = k->ldc;
    cublasStatus_t st =
        cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi));
    if (st == CUBLAS_STATUS_SUCCESS && aux != NULL && k->aux_type != -1) {
#if CUBLAS_VERSION >= 111100 /* the attribute came with cuBLAS 11.11 (CUDA 11.8) */
        const int32_t aux_type = k->aux_type;
        st = cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE,
                                            &aux_type, sizeof(aux_type));
#else
        st = CUBLAS_STATUS_NOT_SUPPORTED;
#endif
    }
    if (st == CUBLAS_STATUS_SUCCESS && bias != NULL)
        st = cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type,
                                            sizeof(bias_type));
    if (st == CUBLAS_STATUS_SUCCESS && bias != NULL)
        st = cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                            sizeof(bias));
    if (st == CUBLAS_STATUS_SUCCESS && aux != NULL)
        st = cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &aux_ld,
                                            sizeof(aux_ld));
    if (st == CUBLAS_STATUS_SUCCESS && aux != NULL)
        st = cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux,
                                            sizeof(aux));
    return st;
}

/* Descriptors for p->key, then the heuristic's best algorithm if it has one; bias and
 * aux: an epilogue's pointers, whose alignment the heuristic reads. */
static cublasStatus_t plan_build(struct cuda_state *s, struct lt_plan *p, const void *bias,
                                 const void *aux)
{
    const struct lt_key *k = &p->key;
    const cublasOperation_t op_a = k->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N; /* our B */
    const cublasOperation_t op_b = k->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N; /* our A */
    cublasStatus_t st = cublasLtMatmulDescCreate(&p->op, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    if (st == CUBLAS_STATUS_SUCCESS)
        st =
            cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof(op_a));
    if (st == CUBLAS_STATUS_SUCCESS)
        st =
            cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof(op_b));
    /* stored column-major shapes: our B (n, k) or (k, n); our A (k, m) or (m, k); C (n, m) */
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatrixLayoutCreate(&p->la, (cudaDataType_t)k->ab,
                                        (uint64_t)(k->trans_b ? k->k : k->n),
                                        (uint64_t)(k->trans_b ? k->n : k->k), k->ldb);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatrixLayoutCreate(&p->lb, (cudaDataType_t)k->ab,
                                        (uint64_t)(k->trans_a ? k->m : k->k),
                                        (uint64_t)(k->trans_a ? k->k : k->m), k->lda);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatrixLayoutCreate(&p->lc, (cudaDataType_t)k->c, (uint64_t)k->n,
                                        (uint64_t)k->m, k->ldc);
    if (st == CUBLAS_STATUS_SUCCESS && k->epilogue != CUBLASLT_EPILOGUE_DEFAULT) {
        st = set_epilogue(p, bias, aux);
        if (st != CUBLAS_STATUS_SUCCESS && k->aux_type != -1)
            return CUBLAS_STATUS_SUCCESS; /* an aux type this cuBLASLt refuses: not usable */
    }
    if (st != CUBLAS_STATUS_SUCCESS)
        return st;

    cublasLtMatmulPreference_t pref = NULL;
    st = cublasLtMatmulPreferenceCreate(&pref);
    if (st != CUBLAS_STATUS_SUCCESS)
        return st;
    const uint64_t ws = s->lt_ws_bytes;
    const uint32_t al_a = (uint32_t)k->align_b, al_b = (uint32_t)k->align_a;
    const uint32_t al_c = (uint32_t)k->align_c;
    st = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                                              sizeof(ws));
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
                                                  &al_a, sizeof(al_a));
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                                                  &al_b, sizeof(al_b));
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
                                                  &al_c, sizeof(al_c));
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES,
                                                  &al_c, sizeof(al_c));
    if (st == CUBLAS_STATUS_SUCCESS) {
        cublasLtMatmulHeuristicResult_t best;
        int found = 0;
        memset(&best, 0, sizeof(best));
        /* no algorithm (NOT_SUPPORTED, or none returned) is an answer, not an error */
        cublasStatus_t h = cublasLtMatmulAlgoGetHeuristic(s->lt, p->op, p->la, p->lb, p->lc, p->lc,
                                                          pref, 1, &best, &found);
        p->usable = h == CUBLAS_STATUS_SUCCESS && found > 0 && best.state == CUBLAS_STATUS_SUCCESS;
        if (p->usable)
            p->algo = best.algo;
    }
    cublasLtMatmulPreferenceDestroy(pref);
    return st;
}

/* The plan for key, built on first use; NULL and the error set if building failed. */
static struct lt_plan *plan_for(struct cuda_state *s, const struct lt_key *key, const void *bias,
                                const void *aux)
{
    if (s->plans == NULL && (s->plans = calloc(1, sizeof(*s->plans))) == NULL) {
        cuda_fail(s, ZERO_ENOMEM, "gemm: out of host memory for the cuBLASLt plans");
        return NULL;
    }
    struct cuda_lt_cache *c = s->plans;
    uint64_t h = key_hash(key);
    for (size_t i = 0; i < c->n; i++)
        if (c->plan[i].hash == h && memcmp(&c->plan[i].key, key, sizeof(*key)) == 0)
            return &c->plan[i];
    if (c->n == LT_MAX_PLANS)
        plans_clear(c);
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 32;
        struct lt_plan *a = realloc(c->plan, cap * sizeof(*a));
        if (a == NULL) {
            cuda_fail(s, ZERO_ENOMEM, "gemm: out of host memory for the cuBLASLt plans");
            return NULL;
        }
        c->plan = a;
        c->cap = cap;
    }
    struct lt_plan *p = &c->plan[c->n];
    memset(p, 0, sizeof(*p));
    p->key = *key;
    p->hash = h;
    cublasStatus_t st = plan_build(s, p, bias, aux);
    if (st != CUBLAS_STATUS_SUCCESS) {
        plan_destroy(p);
        cuda_blas_check(s, st, "gemm: cuBLASLt descriptors");
        return NULL;
    }
    c->n++;
    return p;
}

/* The key of a product: everything but the epilogue's fields */
static struct lt_key key_of(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                            const void *a, int64_t lda, const void *b, int64_t ldb,
                            cudaDataType_t ab, const void *c, int64_t ldc, cudaDataType_t ct)
{
    struct lt_key key;
    memset(&key, 0, sizeof(key));
    key.m = m;
    key.n = n;
    key.k = k;
    key.lda = lda;
    key.ldb = ldb;
    key.ldc = ldc;
    key.trans_a = trans_a != 0;
    key.trans_b = trans_b != 0;
    key.ab = (int32_t)ab;
    key.c = (int32_t)ct;
    key.align_a = alignment(a);
    key.align_b = alignment(b);
    key.align_c = alignment(c);
    key.epilogue = CUBLASLT_EPILOGUE_DEFAULT;
    key.aux_type = -1;
    return key;
}

int cuda_lt_gemm(struct cuda_state *s, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                 float alpha, const void *a, int64_t lda, const void *b, int64_t ldb,
                 cudaDataType_t ab, float beta, void *c, int64_t ldc, cudaDataType_t ct)
{
    /* k = 0 (C = beta C) is left to cublasGemmEx, which defines it */
    if (s->lt == NULL || k == 0)
        return ZERO_ENOTSUP;
    const struct lt_key key = key_of(trans_a, trans_b, m, n, k, a, lda, b, ldb, ab, c, ldc, ct);
    struct lt_plan *p = plan_for(s, &key, NULL, NULL);
    if (p == NULL)
        return ZERO_EBACKEND;
    if (!p->usable)
        return ZERO_ENOTSUP;
    cublasStatus_t st = cublasLtMatmul(s->lt, p->op, &alpha, b, p->la, a, p->lb, &beta, c, p->lc, c,
                                       p->lc, &p->algo, s->lt_ws, s->lt_ws_bytes, s->compute);
    if (st == CUBLAS_STATUS_NOT_SUPPORTED) { /* refused at launch: never ask Lt for it again */
        p->usable = 0;
        return ZERO_ENOTSUP;
    }
    return cuda_blas_check(s, st, "gemm: cublasLtMatmul");
}

int cuda_lt_gemm_epilogue(struct cuda_state *s, int trans_a, int trans_b, int64_t m, int64_t n,
                          int64_t k, const void *a, int64_t lda, const void *b, int64_t ldb,
                          cudaDataType_t ab, int epilogue, const float *bias, const void *aux,
                          int32_t aux_type, float beta, void *d, cudaDataType_t dt, int64_t ldc)
{
    if (s->lt == NULL || k == 0)
        return ZERO_ENOTSUP;
    struct lt_key key = key_of(trans_a, trans_b, m, n, k, a, lda, b, ldb, ab, d, ldc, dt);
    key.epilogue = epilogue;
    key.align_bias = bias != NULL ? alignment(bias) : 0;
    key.align_aux = aux != NULL ? alignment(aux) : 0;
    key.aux_type = aux != NULL ? aux_type : -1;
    struct lt_plan *p = plan_for(s, &key, bias, aux);
    if (p == NULL)
        return ZERO_EBACKEND;
    if (!p->usable)
        return ZERO_ENOTSUP;
    cublasStatus_t st = set_epilogue(p, bias, aux); /* this call's pointers */
    if (st != CUBLAS_STATUS_SUCCESS)
        return cuda_blas_check(s, st, "gemm epilogue: cuBLASLt attributes");
    const float alpha = 1.0f;
    st = cublasLtMatmul(s->lt, p->op, &alpha, b, p->la, a, p->lb, &beta, d, p->lc, d, p->lc,
                        &p->algo, s->lt_ws, s->lt_ws_bytes, s->compute);
    /* refused at launch (an epilogue's limits the heuristic did not check): never again */
    if (st == CUBLAS_STATUS_NOT_SUPPORTED || st == CUBLAS_STATUS_INVALID_VALUE) {
        p->usable = 0;
        return ZERO_ENOTSUP;
    }
    return cuda_blas_check(s, st, "gemm epilogue: cublasLtMatmul");
}

int cuda_lt_open(struct cuda_state *s, char *why, size_t why_len)
{
    const char *env = zero_knob(ZERO_KNOB_CUDA_GEMM);
    if (env != NULL && strcmp(env, "cublas") == 0)
        return ZERO_OK;
    if (env != NULL && *env != '\0' && strcmp(env, "lt") != 0) {
        snprintf(why, why_len, "cuda backend: ZERO_CUDA_GEMM=%s; expected lt or cublas", env);
        return ZERO_EINVAL;
    }
    cublasStatus_t st = cublasLtCreate(&s->lt);
    if (st != CUBLAS_STATUS_SUCCESS) {
        s->lt = NULL;
        snprintf(why, why_len, "cuda backend: rank %d: cublasLtCreate failed: %s", s->rank,
                 cublasGetStatusString(st));
        return ZERO_EBACKEND;
    }
    if (cuda_buffer_grow(s, &s->lt_ws, &s->lt_ws_bytes, LT_WORKSPACE_BYTES, ZERO_TAG_WORKSPACE,
                         "gemm: cuBLASLt workspace") != ZERO_OK) {
        snprintf(why, why_len, "cuda backend: %s", s->err);
        return ZERO_ENOMEM;
    }
    return ZERO_OK;
}

int cuda_blas_capture_workspace(struct cuda_state *s)
{
    /* without one, cuBLAS's default workspace is allocated inside each capture (CUDA
     * < 12.2: a new one per capture; later: allocation nodes in the graph) */
    int rc = cuda_buffer_grow(s, &s->lt_ws, &s->lt_ws_bytes, LT_WORKSPACE_BYTES, ZERO_TAG_WORKSPACE,
                              "gemm: cuBLAS workspace for the graphs");
    if (rc == ZERO_OK)
        rc = cuda_blas_check(s, cublasSetWorkspace(s->blas, s->lt_ws, s->lt_ws_bytes),
                             "graph_open: cublasSetWorkspace");
    return rc;
}

size_t cuda_product_workspace_bytes(void *self)
{
    (void)self; /* one workspace for every product, held from open (or the first capture) */
    return LT_WORKSPACE_BYTES;
}

void cuda_lt_close(struct cuda_state *s)
{
    if (s->plans != NULL) {
        plans_clear(s->plans);
        free(s->plans->plan);
        free(s->plans);
        s->plans = NULL;
    }
    cuda_buffer_free(s, &s->lt_ws, &s->lt_ws_bytes, ZERO_TAG_WORKSPACE);
    if (s->lt != NULL)
        cublasLtDestroy(s->lt);
    s->lt = NULL;
}
