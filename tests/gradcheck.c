/* See gradcheck.h. */
#include <check.h>
#include <math.h>

#include "gradcheck.h"

/* With h = 1e-6 the central difference's truncation (O(h^2)) and float64 rounding
 * (O(1e-16 / h)) stay far below the bound, which leaves room for the rounding of
 * the fp32 backward. */
static const double fd_step = 1e-6, fd_rtol = 1e-3, fd_floor = 1e-3;

static double objective(const struct gradcheck *c)
{
    c->forward(c->args, c->y);
    double L = 0.0;
    for (size_t i = 0; i < c->ny; i++)
        L += c->y[i] * c->r[i];
    return L;
}

void gradcheck_tensor(const struct gradcheck *c, const char *what, double *v, const float *grad,
                      size_t n)
{
    for (size_t j = 0; j < n; j++) {
        const double keep = v[j];
        v[j] = keep + fd_step;
        const double lp = objective(c);
        v[j] = keep - fd_step;
        const double lm = objective(c);
        v[j] = keep;
        const double num = (lp - lm) / (2 * fd_step), ana = grad[j];
        ck_assert_msg(fabs(ana - num) <= fd_rtol * fmax(fabs(num), fd_floor),
                      "%s: d%s[%zu] = %.9g, finite difference %.9g", c->unit, what, j, ana, num);
    }
}
