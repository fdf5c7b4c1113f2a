/*
 * nanoprobe.h: the subcommands of the `nanoprobe` command. Each is
 * `int nanoprobe_cmd_<name>(int argc, char **argv)` in its own file, argv[0]
 * being the subcommand's name; it returns the process exit status.
 */
#ifndef NANOPROBE_TOOL_H
#define NANOPROBE_TOOL_H

/* nanoprobe gate: compare atomics or instructions with a baseline (gate.c). */
int nanoprobe_cmd_gate(int argc, char **argv);

#endif
