/* Hugging Face model directories in and out of an engine; see hf_io.h. */
#include "hf_io.h"

#include <stdlib.h>

#include "program/example_agree.h"

static size_t tensor_numel(const struct zero_llama_tensor *t)
{
    return (size_t)(t->shape[0] * (t->ndim == 2 ? t->shape[1] : 1));
}

static size_t largest_tensor(const struct zero_llama_config *c)
{
    size_t most = 0;
    struct zero_error ignore;
    for (int k = 0; k < zero_llama_tensor_count(c); k++) {
        struct zero_llama_tensor t;
        if (zero_llama_tensor(c, k, &t, &ignore) == 0 && tensor_numel(&t) > most)
            most = tensor_numel(&t);
    }
    return most;
}

int hf_load_llama(struct zero_engine *e, const struct zero_llama_config *c, const char *dir,
                  struct zero_comm *comm, struct zero_error *err)
{
    int rank = zero_comm_rank(comm);
    struct zero_hf_weights *w = NULL;
    float *host = malloc(largest_tensor(c) * sizeof *host + 1); /* (numel) */
    int rc = host ? ZERO_OK : zero_fail(err, ZERO_ENOMEM, "%s: weight buffer", dir);
    if (!rc && rank == 0 && !(rc = zero_hf_weights_open(&w, dir, err)))
        rc = zero_hf_weights_check_llama(w, c, err);
    rc = example_agree(rc, err, comm);
    for (int k = 0; !rc && k < zero_llama_tensor_count(c); k++) {
        struct zero_llama_tensor t;
        rc = zero_llama_tensor(c, k, &t, err);
        if (!rc && rank == 0)
            rc = zero_hf_weights_read(w, zero_hf_weights_find(w, t.name), host, ZERO_F32,
                                      tensor_numel(&t), err);
        if ((rc = example_agree(rc, err, comm)))
            break;
        zero_comm_bcast(comm, host, tensor_numel(&t) * sizeof *host, 0);
        rc = example_agree(zero_engine_write_param(e, t.unit, t.param, host, err), err, comm);
    }
    zero_hf_weights_close(w);
    free(host);
    return rc;
}

int hf_save_llama(struct zero_engine *e, const struct zero_llama_config *c, const char *dir,
                  enum zero_dtype dtype, int64_t max_shard_bytes, struct zero_comm *comm,
                  struct zero_error *err)
{
    int rank = zero_comm_rank(comm);
    struct zero_hf_writer *w = NULL;
    float *host = malloc(largest_tensor(c) * sizeof *host + 1); /* (numel) */
    int rc = host ? ZERO_OK : zero_fail(err, ZERO_ENOMEM, "%s: weight buffer", dir);
    if (!rc && rank == 0)
        rc = zero_hf_writer_begin(&w, dir, c, dtype, max_shard_bytes, err);
    rc = example_agree(rc, err, comm);
    for (int k = 0; !rc && k < zero_llama_tensor_count(c); k++) {
        struct zero_llama_tensor t;
        rc = zero_llama_tensor(c, k, &t, err);
        if (!rc) /* collective: every rank takes part in gathering a stage-3 shard */
            rc = zero_engine_read_param(e, t.unit, t.param, host, err);
        if (!rc && rank == 0)
            rc = zero_hf_writer_put(w, k, host, tensor_numel(&t), err);
        rc = example_agree(rc, err, comm);
    }
    if (rank == 0) {
        if (!rc)
            rc = zero_hf_writer_finish(w, err);
        else
            zero_hf_writer_abort(w);
    }
    rc = example_agree(rc, err, comm);
    free(host);
    return rc;
}
