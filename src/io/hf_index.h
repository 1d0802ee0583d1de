/* model.safetensors.index.json: which shard holds each tensor. Private to libzero
 * (the weights reader, the writer's test and the fuzz target share it). */
#ifndef ZERO_HF_INDEX_H
#define ZERO_HF_INDEX_H

#include <stddef.h>

#include "zero/error.h"

struct zero_hf_index {
    int ntensors;
    char **names;  /* (ntensors) tensor names, in the file's order */
    int *shard_of; /* (ntensors) index into shards */
    int nshards;
    char **shards; /* (nshards) distinct shard file names, first-seen order */
};

/* Parses the index text: an object whose "weight_map" maps each tensor name to a
 * shard file name, a plain name inside the model directory (no '/', not "." or "..",
 * ending in ".safetensors"); "metadata" and other members are ignored. */
int zero_hf_index_parse(struct zero_hf_index *x, const char *text, size_t len, const char *where,
                        struct zero_error *err);
void zero_hf_index_free(struct zero_hf_index *x);

#endif
