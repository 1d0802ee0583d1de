/* The toy model of examples/train_mlp: residual MLP blocks and a classifier. */
#include <stdio.h>

#include "zero/nn.h"
#include "zero/size.h"

int zero_nn_build_mlp(struct zero_model **m, int64_t hidden, int layers, int64_t classes,
                      struct zero_error *err)
{
    *m = NULL;
    if (hidden <= 0 || layers < 0 || classes <= 0)
        return zero_fail(err, ZERO_EINVAL,
                         "mlp model: need hidden > 0, layers >= 0, "
                         "classes > 0 (got %lld, %d, %lld)",
                         (long long)hidden, layers, (long long)classes);
    int64_t inner; /* the blocks' inner width, 4H */
    if (zero_size_mul(&inner, hidden, 4, "mlp model: inner width 4 * hidden", err))
        return err->code;
    struct zero_model *model;
    int rc = zero_model_create(&model, err);
    if (rc != ZERO_OK)
        return rc;
    for (int l = 0; l < layers && rc == ZERO_OK; l++) {
        char name[ZERO_NAME_LEN];
        struct zero_unit *u;
        snprintf(name, sizeof(name), "layers.%d", l);
        rc = zero_nn_mlp_block(&u, name, hidden, inner, err);
        if (rc == ZERO_OK)
            rc = zero_model_add(model, u, err);
    }
    if (rc == ZERO_OK) {
        struct zero_unit *u;
        rc = zero_nn_classifier(&u, "classifier", hidden, classes, err);
        if (rc == ZERO_OK)
            rc = zero_model_add(model, u, err);
    }
    if (rc != ZERO_OK) {
        zero_model_destroy(model);
        return rc;
    }
    *m = model;
    return ZERO_OK;
}
