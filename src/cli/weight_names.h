/* One parameter, many spellings: the names other trainers give libzero's tensors.
 *
 * A PyTorch state_dict wrapped by DDP or DeepSpeed prefixes "module.", torch.compile
 * prefixes "_orig_mod.", Hugging Face's GPT2LMHeadModel "transformer." and its Llama
 * (LlamaForCausalLM) "model."; a name's canonical form strips any run of those from its
 * front, so "module._orig_mod.transformer.h.0.ln_1.weight" and libzero's "h.0.ln_1.weight"
 * are one tensor. Two more rules decide what a tensor seen in one file only means:
 *   - a buffer, not a parameter (HF GPT-2's causal masks ".attn.bias" and
 *     ".attn.masked_bias", a Llama's "rotary_emb.inv_freq"): not compared;
 *   - a tied copy: "lm_head.weight" whose bits equal its own file's token embedding
 *     ("wte.weight", or a Llama's "embed_tokens.weight"): the embedding is compared.
 * Pure string logic, no I/O. */
#ifndef ZERO_CLI_WEIGHT_NAMES_H
#define ZERO_CLI_WEIGHT_NAMES_H

/* The canonical form of name: a suffix of it (never empty: a name that is all prefix
 * keeps its last component). */
const char *weight_name_canonical(const char *name);

/* A tensor that is a buffer (a mask, a rotary table) when only one file has it. */
int weight_name_is_buffer(const char *canonical);

/* The canonical name of the tensor that canonical may be a tied copy of ("wte.weight"
 * for "lm_head.weight"), the i-th candidate, or NULL past the last. */
const char *weight_name_tied_to(const char *canonical, int i);

#endif
