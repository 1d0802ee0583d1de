#!/usr/bin/env python3
"""Prints the polynomials of src/base/exact_math.h (exp, erf, tanh) as C, coefficients in hex floats.

Chebyshev fits with mpmath at 40 digits, each coefficient rounded once to the nearest
double. Run it only to change the algorithm (the header's pinned test hashes change too):
    python3 bench/exact_math_coeffs.py
"""
import mpmath as mp

mp.mp.dps = 40


def fit(f, a, b, degree):
    poly, err = mp.chebyfit(f, [a, b], degree + 1, error=True)
    return [float(c).hex() for c in poly], err  # highest power first, as Horner wants


def poly(var, coeffs):
    """EXACT_POLYn(var, highest, ..., constant): Horner with the products rounded apart."""
    return "EXACT_POLY%d(%s, %s)" % (len(coeffs), var, ", ".join(coeffs))


def emit(comment, fits):
    worst = max(err for _, err in fits)
    print("/* %s; max fit error %s */" % (comment, mp.nstr(worst, 3)))


def erf_small(s):
    return mp.erf(mp.sqrt(s)) / mp.sqrt(s) if s > 0 else 2 / mp.sqrt(mp.pi)


def tanh_small(s):
    return mp.tanh(mp.sqrt(s)) / mp.sqrt(s) if s > 0 else mp.mpf(1)


small = fit(erf_small, 0, 0.25, 7)
emit("erf(x) / x, a polynomial in s = x^2, s in [0, 1/4]", [small])
print("    return %s;" % poly("s", small[0]))
pieces = [fit(lambda t, c=0.75 + 0.5 * i: mp.erf(c + t), -0.25, 0.25, 10) for i in range(7)]
emit("erf(c + t), t in [-1/4, 1/4], c = 0.75, 1.25, ..., 3.75", pieces)
for i, (coeffs, _) in enumerate(pieces):
    c = 0.75 + 0.5 * i
    print("    if (ax < %.1f)\n        return %s;" % (c + 0.25, poly("(ax - %.2f)" % c, coeffs)))
tanh = fit(tanh_small, 0, 0.5625 ** 2, 9)
emit("tanh(x) / x, a polynomial in s = x^2, |x| <= 0.5625", [tanh])
print("    return %s;" % poly("s", tanh[0]))
half_ln2 = mp.log(2) / 2 * mp.mpf("1.0001")  # a margin for the rounding of the reduction
exp_fit = fit(mp.exp, -half_ln2, half_ln2, 9)
emit("e^r, |r| <= ln2 / 2", [exp_fit])
print("    return %s;" % poly("r", exp_fit[0]))
