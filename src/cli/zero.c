/* zero: the libzero command-line tool, a dispatcher of subcommands (commands.h).
 *
 *     zero <command> [options]     zero <command> --help     zero --help */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "program/flags.h"

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "unknown"
#endif

struct command {
    const char *name;
    const char *summary;
    int (*run)(int argc, char **argv);
};

#define ZERO_COMMAND_ENTRY(name, summary) {#name, summary, zero_cmd_##name},
static const struct command commands[] = {ZERO_COMMANDS(ZERO_COMMAND_ENTRY)};
#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *out)
{
    fprintf(out,
            "usage: zero <command> [options]\n"
            "       zero <command> --help\n\n"
            "libzero %s: ZeRO (Zero Redundancy Optimizer) in C.\n\ncommands:\n",
            PACKAGE_VERSION);
    for (size_t i = 0; i < N_COMMANDS; i++)
        fprintf(out, "  %-12s %s\n", commands[i].name, commands[i].summary);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *name = argv[1];
    if (flags_is_help(name) || strcmp(name, "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(name, "--version") == 0) {
        printf("zero (libzero) %s\n", PACKAGE_VERSION);
        return 0;
    }
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (strcmp(name, commands[i].name) == 0)
            return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "zero: unknown command '%s'\n\n", name);
    usage(stderr);
    return 2;
}
