/* The rounding envelope: per step and per tensor, the largest difference that summation
 * order alone produced among K runs of one training with K order seeds (zero envelope
 * writes it from their trajectories; zero diff --envelope reads it).
 *
 * File: JSON lines. The first is the header
 *     {"envelope": 1, "runs": K, "from": ["a.jsonl", ...]}
 * then one line per step
 *     {"step": 1, "loss": 2e-8, "grad_norm": 4e-7,
 *      "tensors": {"h.0.ln_1.weight": {"max_abs": 1e-9, "rel_l2": 3e-10}, ...}}
 * each value the largest over every pair of runs of |x_i - x_j| (max_abs: the largest
 * element's; rel_l2: ||w_i - w_j|| / ||w_i||); tensors by canonical name
 * (weight_names.h). A step whose runs wrote no weights has no "tensors". */
#ifndef ZERO_CLI_ENVELOPE_H
#define ZERO_CLI_ENVELOPE_H

#include <stddef.h>
#include <stdint.h>

struct envelope_tensor {
    char *name; /* canonical */
    double max_abs, rel_l2;
};

struct envelope_step {
    int64_t step;
    double loss, grad_norm;
    int ntensors;
    struct envelope_tensor *tensor;
};

struct envelope {
    int runs;
    int nsteps;
    struct envelope_step *steps;
};

/* Reads path; on a bad file returns non-zero with msg naming the file, line and key. */
int envelope_load(struct envelope *e, const char *path, char *msg, size_t len);
void envelope_free(struct envelope *e);

/* The line of step `step`, or NULL. */
const struct envelope_step *envelope_step_at(const struct envelope *e, int64_t step);
/* The tensor called canonical in s, or NULL. */
const struct envelope_tensor *envelope_tensor_at(const struct envelope_step *s,
                                                 const char *canonical);

#endif
