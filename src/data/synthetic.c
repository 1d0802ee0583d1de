/* Deterministic synthetic classification data; see include/zero/synthetic.h. */
#include "zero/synthetic.h"

static uint64_t hash3(uint64_t a, uint64_t b, uint64_t c)
{
    uint64_t x = a * 0x9e3779b97f4a7c15ULL ^ (b + 0x632be59bd9b4e019ULL) * 0xbf58476d1ce4e5b9ULL ^
                 (c + 0x85ebca6b) * 0x94d049bb133111ebULL;
    x ^= x >> 31;
    x *= 0xd6e8feb86659fd93ULL;
    x ^= x >> 32;
    return x;
}

static float unit_uniform(uint64_t h)
{
    return (float)((double)(h >> 40) * 0x1p-23 - 1.0); /* [-1, 1) */
}

void zero_synthetic_samples(uint64_t seed, int64_t width, int64_t classes, int64_t first, int64_t n,
                            float *inputs, int32_t *labels)
{
    for (int64_t i = 0; i < n; i++) {
        float *x = inputs + i * width;
        uint64_t s = (uint64_t)(first + i);
        for (int64_t f = 0; f < width; f++)
            x[f] = unit_uniform(hash3(seed, s, (uint64_t)f));
        int32_t best = 0;
        double best_score = 0.0;
        for (int64_t c = 0; c < classes; c++) {
            double score = 0.0; /* teacher row c: a second stream keyed by ~seed */
            for (int64_t f = 0; f < width; f++)
                score += unit_uniform(hash3(~seed, (uint64_t)c, (uint64_t)f)) * x[f];
            if (c == 0 || score > best_score) {
                best = (int32_t)c;
                best_score = score;
            }
        }
        labels[i] = best;
    }
}

int64_t zero_atom_first_sample(int64_t step, int64_t micro_step, int rank, int world, int64_t accum,
                               int64_t micro_batch)
{
    return zero_atom_first_sample_in(ZERO_ATOM_MICRO_STEP_MAJOR, step, micro_step, rank, world,
                                     accum, micro_batch);
}
