/* The subcommands of the `zero` tool: one line each.
 *
 * To add `zero foo`: write int zero_cmd_foo(int argc, char **argv) in src/cli/foo.c
 * (argv[0] is "foo"; it handles --help itself and returns the exit status), list the
 * file in src/cli/local.mk, and add X(foo, "one-line summary") below. */
#ifndef ZERO_CLI_COMMANDS_H
#define ZERO_CLI_COMMANDS_H

#define ZERO_COMMANDS(X)                                                                           \
    X(selftest, "run every collective in both modes on this mpirun world and check them")          \
    X(config, "print a ds_config.json resolved: every key, its value and origin")                  \
    X(estimate, "model-state memory per rank for stages 0-3 (ZeRO paper, DeepSpeed)")              \
    X(schedule, "one training step as the ordered list of what a rank computes and sends")         \
    X(memory, "measured per-rank memory ledger of stages 0-3 next to theory (--svg)")              \
    X(verify, "same model, data and seed in stages 0-3: per-step weight hashes, first diff")       \
    X(ckpt, "inspect a sharded checkpoint (verify every checksum) or export it to safetensors")    \
    X(tokenize, "text files to token shards with a model's tokenizer.json, or a shard to text")    \
    X(diff, "two runs' weights or trajectories: ulps, first difference, verdict by an envelope")   \
    X(envelope, "the rounding envelope of K runs in K summation orders (--order-seed), per step")

#define ZERO_COMMAND_DECLARE(name, summary) int zero_cmd_##name(int argc, char **argv);
ZERO_COMMANDS(ZERO_COMMAND_DECLARE)
#undef ZERO_COMMAND_DECLARE

#endif
