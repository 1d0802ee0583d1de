/* The Llama kernels' elementwise math, written once for the cpu and the cuda kernels
 * (EXACT_FN: host and device) so both compute the same bits by construction. Built
 * from exact_math.h's portable functions; semantics in zero/backend_llama.h. Products
 * that feed a sum go through EXACT_MUL: nvcc would fuse them. */
#ifndef ZERO_BASE_LLAMA_MATH_H
#define ZERO_BASE_LLAMA_MATH_H

#include "base/exact_math.h"
#include "zero/backend_llama.h"

/* The rope's inverse frequency of pair i (0 <= i < D/2): theta^(-2i/D) in double,
 * rescaled as Hugging Face's _compute_llama3_parameters where p->llama3 (wavelengths
 * longer than original_max / low_freq_factor slowed by factor, shorter than
 * original_max / high_freq_factor kept, the band between interpolated), rounded once. */
EXACT_FN float llama_rope_inv_freq(int64_t i, int64_t D, const struct zero_rope_params *p)
{
    const double two_pi = 0x1.921fb54442d18p+2;
    double inv = exact_exp(EXACT_MUL(-((double)(2 * i) / (double)D), exact_log(p->theta)));
    if (p->llama3) {
        const double old = p->original_max_position_embeddings;
        const double low_wavelen = old / p->low_freq_factor;
        const double high_wavelen = old / p->high_freq_factor;
        const double wavelen = two_pi / inv;
        if (wavelen > low_wavelen) {
            inv = inv / p->factor;
        } else if (!(wavelen < high_wavelen)) { /* the medium band */
            const double smooth =
                (old / wavelen - p->low_freq_factor) / (p->high_freq_factor - p->low_freq_factor);
            inv = EXACT_MUL(1.0 - smooth, inv) / p->factor + EXACT_MUL(smooth, inv);
        }
    }
    return (float)inv;
}

/* cos and sin of position t's angle for pair i: the fp32 product t * inv_freq, then the
 * functions in double, each rounded once. */
EXACT_FN void llama_rope_cos_sin(int64_t t, float inv_freq, float *c, float *s)
{
    const float angle = (float)t * inv_freq;
    *c = (float)exact_cos((double)angle);
    *s = (float)exact_sin((double)angle);
}

/* The logistic function 1 / (1 + e^-g), exact_expf's bits. */
EXACT_FN float llama_sigmoid(float g)
{
    return 1.0f / (1.0f + exact_expf(-g));
}

#endif
