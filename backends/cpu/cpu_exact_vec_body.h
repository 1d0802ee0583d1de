/* The vectorized float functions of cpu_exact_vec.h, written once over a few vector
 * operations that the including file defines for its instruction set
 * (cpu_exact_vec_avx2.c, cpu_exact_vec_avx512.c):
 *
 *   vd, vm, vix      a vector of VEC_LANES doubles, a lane mask, a table index per lane
 *   VEC_FN           static inline with the instruction set's target attribute
 *   VEC_TARGET       the target attribute, for the exported loops
 *   VEC_NAME(f)      the exported name of f's loop (cpu_exact_f_avx2, ...)
 *   vd_set(c), vd_add, vd_sub, vd_mul, vd_div   broadcast; IEEE +, -, *, / (never fused)
 *   vd_lt, vd_le, vd_gt (ordered: false for NaN), vd_isnan           -> vm
 *   vd_select(m, a, b)  m ? a : b;   vd_abs(x);   vd_flip(r, x): r with its sign flipped
 *                       where x's sign bit is set;   vd_floor(x)
 *   vd_index(f)         the index of the integral f in 0..7 (the others: any of 0..7)
 *   vd_lookup(row, j)   row[j] per lane, row 8 doubles
 *   vd_pow2_of(t)       2^k for t = k + 1.5 * 2^52 (|k| < 1023): k's bits in t's mantissa
 *   vd_load(p), vd_store(p, v)   VEC_LANES floats widened to double (exact), and
 *                                rounded back to nearest (the C cast's rounding)
 *   vd_store_wide(p, v)          VEC_LANES doubles as they are
 *
 * Each function is its scalar model's sequence of double operations, step for step and
 * in the same order (the comments name the model's lines); each branch of the model is
 * computed in every lane and the lane's own branch selected, so garbage in the lanes of
 * the other branches (NaN, inf, a wrong table row) never reaches a result. */

/* exact_exp_for_float: kd = (y inv_ln2 + 1.5 2^52) - 1.5 2^52, r = (y - kd ln2_hi) -
 * kd ln2_lo, e^r 2^kd; 2^kd from the bits of kd + 1.5 2^52, as exact_pow2((int)kd) */
VEC_FN vd vec_exp_for_float(vd y)
{
    static const double c[] = {EXACT_EXP_COEFFS};
    vd t = vd_add(vd_mul(y, vd_set(EXACT_INV_LN2)), vd_set(EXACT_ROUND_INT));
    vd kd = vd_sub(t, vd_set(EXACT_ROUND_INT));
    vd r = vd_sub(vd_sub(y, vd_mul(kd, vd_set(EXACT_LN2_HI))), vd_mul(kd, vd_set(EXACT_LN2_LO)));
    vd p = vd_set(c[0]); /* EXACT_POLY10: (c0 r + c1) r + ... */
    for (size_t k = 1; k < sizeof c / sizeof c[0]; k++)
        p = vd_add(vd_mul(p, r), vd_set(c[k]));
    return vd_mul(p, vd_pow2_of(t));
}

/* exact_expf: NaN -> x quieted (the rounding to float quiets it, payload kept),
 * x > 89 -> inf, x < -104 -> 0, else e^x rounded once */
VEC_FN vd vec_expf(vd x)
{
    vd r = vec_exp_for_float(x);
    r = vd_select(vd_gt(x, vd_set(89.0)), vd_set(exact_from_bits(EXACT_INF_BITS)), r);
    r = vd_select(vd_lt(x, vd_set(-104.0)), vd_set(0.0), r);
    return vd_select(vd_isnan(x), x, r);
}

/* exact_erff. Its pieces by floor(2|x|) = j: 0 the small polynomial x P(x^2) (|x| <
 * 1/2), 1..7 exact_erf_piece's polynomials in |x| - (j / 2 + 1/4) (|x| in [j / 2, (j +
 * 1) / 2)), 1 from 4 on, the sign of x on the pieces. erf_rows: row j's Horner
 * coefficients, the small polynomial's padded with zeros in front (0 s + 0 = +0 and 0 s
 * + c = c exactly for s = x^2 finite, so the padded chain is EXACT_POLY8's). */
static const double erf_rows[8][11] = {{0.0, 0.0, 0.0, EXACT_ERF_SMALL_COEFFS},
                                       {EXACT_ERF_PIECE0_COEFFS},
                                       {EXACT_ERF_PIECE1_COEFFS},
                                       {EXACT_ERF_PIECE2_COEFFS},
                                       {EXACT_ERF_PIECE3_COEFFS},
                                       {EXACT_ERF_PIECE4_COEFFS},
                                       {EXACT_ERF_PIECE5_COEFFS},
                                       {EXACT_ERF_PIECE6_COEFFS}};

/* erf_rows transposed: by_coeff[k][j] = erf_rows[j][k], one lookup row per coefficient */
struct erf_table {
    double by_coeff[11][8];
};

static void erf_table_fill(struct erf_table *t)
{
    for (int k = 0; k < 11; k++)
        for (int j = 0; j < 8; j++)
            t->by_coeff[k][j] = erf_rows[j][k];
}

VEC_FN vd vec_erff(vd x, const struct erf_table *tab)
{
    vd ax = vd_abs(x);
    vd f = vd_floor(vd_add(ax, ax)); /* 2 |x| is exact */
    vix j = vd_index(f);
    vm small = vd_lt(ax, vd_set(0.5));
    /* the argument: x^2 (EXACT_MUL(xd, xd)) or (ax - c), c = j / 2 + 1/4 exactly */
    vd center = vd_add(vd_mul(f, vd_set(0.5)), vd_set(0.25));
    vd arg = vd_select(small, vd_mul(x, x), vd_sub(ax, center));
    vd p = vd_lookup(tab->by_coeff[0], j);
    for (int k = 1; k < 11; k++)
        p = vd_add(vd_mul(p, arg), vd_lookup(tab->by_coeff[k], j));
    vd big = vd_flip(vd_select(vd_lt(ax, vd_set(4.0)), p, vd_set(1.0)), x); /* xd < 0 ? -r : r */
    vd r = vd_select(small, vd_mul(x, p), big); /* EXACT_MUL(xd, exact_erf_small(...)) */
    return vd_select(vd_isnan(x), x, r);
}

/* exact_tanhf: x P(x^2) for |x| <= 0.5625, else 1 - 2 / (e^(2|x|) + 1) below 10 and 1
 * from 10 on, with the sign of x */
VEC_FN vd vec_tanhf(vd x)
{
    static const double c[] = {EXACT_TANH_SMALL_COEFFS};
    vd ax = vd_abs(x);
    vd s = vd_mul(x, x);
    vd p = vd_set(c[0]);
    for (size_t k = 1; k < sizeof c / sizeof c[0]; k++)
        p = vd_add(vd_mul(p, s), vd_set(c[k]));
    vd e = vec_exp_for_float(vd_mul(vd_set(2.0), ax));
    vd q = vd_sub(vd_set(1.0), vd_div(vd_set(2.0), vd_add(e, vd_set(1.0))));
    vd big = vd_flip(vd_select(vd_lt(ax, vd_set(10.0)), q, vd_set(1.0)), x);
    vd r = vd_select(vd_le(ax, vd_set(0.5625)), vd_mul(x, p), big);
    return vd_select(vd_isnan(x), x, r);
}

/* The loops: whole vectors, then the tail with the scalar function (the same bits). */
VEC_TARGET void VEC_NAME(expf)(float *y, const float *x, size_t n)
{
    size_t i = 0;
    for (; i + VEC_LANES <= n; i += VEC_LANES)
        vd_store(y + i, vec_expf(vd_load(x + i)));
    for (; i < n; i++)
        y[i] = exact_expf(x[i]);
}

VEC_TARGET void VEC_NAME(erff)(float *y, const float *x, size_t n)
{
    struct erf_table tab;
    erf_table_fill(&tab);
    size_t i = 0;
    for (; i + VEC_LANES <= n; i += VEC_LANES)
        vd_store(y + i, vec_erff(vd_load(x + i), &tab));
    for (; i < n; i++)
        y[i] = exact_erff(x[i]);
}

VEC_TARGET void VEC_NAME(tanhf)(float *y, const float *x, size_t n)
{
    size_t i = 0;
    for (; i + VEC_LANES <= n; i += VEC_LANES)
        vd_store(y + i, vec_tanhf(vd_load(x + i)));
    for (; i < n; i++)
        y[i] = exact_tanhf(x[i]);
}

/* The double results before their rounding to float, whole vectors only (n a multiple
 * of VEC_LANES), for tests: a double off in its last bit almost never shows in the
 * float, so the tests compare these with the scalar functions' doubles. */
VEC_TARGET void VEC_NAME(expf_wide)(double *y, const float *x, size_t n)
{
    for (size_t i = 0; i + VEC_LANES <= n; i += VEC_LANES)
        vd_store_wide(y + i, vec_expf(vd_load(x + i)));
}

VEC_TARGET void VEC_NAME(erff_wide)(double *y, const float *x, size_t n)
{
    struct erf_table tab;
    erf_table_fill(&tab);
    for (size_t i = 0; i + VEC_LANES <= n; i += VEC_LANES)
        vd_store_wide(y + i, vec_erff(vd_load(x + i), &tab));
}

VEC_TARGET void VEC_NAME(tanhf_wide)(double *y, const float *x, size_t n)
{
    for (size_t i = 0; i + VEC_LANES <= n; i += VEC_LANES)
        vd_store_wide(y + i, vec_tanhf(vd_load(x + i)));
}
