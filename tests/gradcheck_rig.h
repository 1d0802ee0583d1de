/* The rig both gradient-check suites (test_nn_gradcheck, test_gpt_gradcheck) run a
 * unit in: the unit's memory on the cpu backend, random inputs from a seeded
 * generator with host and float64 copies, forward and backward through the unit's
 * ops, and the whole specification of a unit (rig_check_unit): fp32 forward against
 * the test's float64 reference, every gradient against central differences
 * (gradcheck.h), accumulation adds, a fresh backward writes the same bits again.
 * Each suite keeps only its references and its cases. */
#ifndef ZERO_TEST_GRADCHECK_RIG_H
#define ZERO_TEST_GRADCHECK_RIG_H

#include <check.h>
#include <stddef.h>
#include <stdint.h>

#include "gradcheck.h"
#include "zero/zero.h"

#define RIG_SLOTS (ZERO_UNIT_MAX_PARAMS + ZERO_UNIT_MAX_EXTERNAL)

/* The device every rig runs on: opened by rig_main. */
extern struct zero_device *rig_dev;

/* ---- deterministic inputs (splitmix64) ---- */
void rig_seed(uint64_t seed);
double rig_uniform(double a); /* uniform in [-a, a) */
float *rig_random_floats(size_t n, double a);
void *rig_xmalloc(size_t bytes); /* fails the test when out of memory; 0 bytes is fine */
double *rig_to_double(const float *x, size_t n);

/* ---- device memory ---- */
void *rig_dev_alloc(size_t bytes, enum zero_tag tag); /* NULL for 0 bytes */
void rig_upload(void *dev, const void *host, size_t bytes);
void rig_download(void *host, const void *dev, size_t bytes);

/* What a unit is fed besides its random parameters, x and r. */
struct rig_inputs {
    double x_range;              /* x uniform in [-x_range, x_range) */
    const int64_t *external_len; /* elements of each external parameter (NULL if none) */
    const int32_t *tokens;       /* (rows) or NULL */
    const int32_t *labels;       /* (rows) or NULL */
};

/* A unit with its memory on the device and host copies of its inputs. */
struct rig {
    struct zero_unit *u;
    int64_t rows, in, out;
    int np, nslots; /* own parameters; own + external */
    size_t len[RIG_SLOTS];
    float *hp[RIG_SLOTS];  /* host parameters */
    float *hx, *hr;        /* host x (rows, in), r (rows, out) */
    double *pd[RIG_SLOTS]; /* the parameters in float64, for the reference */
    double *xd, *rd;       /* x (rows, in), r (rows, out) in float64 */
    float *param[RIG_SLOTS], *grad[RIG_SLOTS];
    float *x, *y, *dy, *dx;
    int32_t *tokens, *labels;
    void *saved, *scratch;
    char errmsg[ZERO_ERRMSG_LEN];
    struct zero_unit_ctx ctx;
};

/* Draws the parameters (uniform 0.5), x and r (dloss = 1/rows for a loss unit) from
 * the generator, in that order; saved and scratch are exactly what the unit asks for
 * (an overrun shows under the sanitizers). rig_close destroys the unit. */
void rig_open(struct rig *g, struct zero_unit *u, int64_t rows, const struct rig_inputs *in);
void rig_close(struct rig *g);
void rig_forward(struct rig *g);
/* Backward with every grad_accumulate flag set to acc; dx NULL when !want_dx. */
void rig_backward(struct rig *g, int acc, int want_dx);

/* The whole specification for one unit: a (the test's reference arguments) must
 * read the parameters and x from g->pd and g->xd, which the finite differences
 * perturb. The forward must match the reference within fwd_rtol * max(1, |y|). */
void rig_check_unit(struct rig *g, ref_forward_fn ref, const struct ref_args *a, double fwd_rtol);

/* Opens rig_dev (cpu backend, exact mode) and runs the suite without forking;
 * prog names a failure to open. */
int rig_main(int argc, char **argv, const char *prog, Suite *(*suite)(void));

#endif
