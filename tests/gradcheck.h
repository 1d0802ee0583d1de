/* Finite-difference check of a unit's gradients: each element of a gradient the
 * unit's backward computed against the central difference of a float64 reference
 * of its forward, for the objective L = sum(y * r) with r fixed (the dy the
 * backward was given). A mismatch fails the running Check test, naming the unit,
 * the tensor and the element. */
#ifndef ZERO_TEST_GRADCHECK_H
#define ZERO_TEST_GRADCHECK_H

#include <stddef.h>

/* What a test's reference forward reads (its parameters and input in float64):
 * each test defines the struct; here it is only passed through. */
struct ref_args;

/* y (ny) = the unit's forward in float64 */
typedef void (*ref_forward_fn)(const struct ref_args *a, double *y);

/* The objective whose gradients are checked: L = sum(y * r), y = forward(args). */
struct gradcheck {
    ref_forward_fn forward;
    const struct ref_args *args;
    const double *r; /* (ny) */
    double *y;       /* (ny) scratch for the forward */
    size_t ny;
    const char *unit; /* names a failure: "unit: dwhat[j] = ..., finite difference ..." */
};

/* grad (n), the analytic dL/dv, against (L(v + h e_j) - L(v - h e_j)) / 2h for
 * every j, with h = 1e-6 and |grad[j] - numeric| <= 1e-3 max(|numeric|, 1e-3).
 * v (n) is one of the forward's inputs, reached through c->args: it is perturbed
 * in place and restored. */
void gradcheck_tensor(const struct gradcheck *c, const char *what, double *v, const float *grad,
                      size_t n);

#endif
