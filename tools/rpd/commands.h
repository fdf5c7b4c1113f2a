/*
 * commands.h: the subcommands of the `rpd` tool. Each is implemented in its own
 * file tools/rpd/<name>.c as `int rpd_cmd_<name>(int argc, char **argv)`, where
 * argv[0] is the subcommand name; it returns the process exit code (0 success,
 * 1 failure of the operation, 2 bad usage or unreadable input). main.c
 * dispatches through a table of the commands that exist.
 */
#ifndef NANO_RPD_COMMANDS_H
#define NANO_RPD_COMMANDS_H

int rpd_cmd_create(int argc, char **argv);
int rpd_cmd_info(int argc, char **argv);
int rpd_cmd_top(int argc, char **argv);
int rpd_cmd_summary(int argc, char **argv);
int rpd_cmd_export(int argc, char **argv);
int rpd_cmd_callstack(int argc, char **argv);
int rpd_cmd_graph(int argc, char **argv);
int rpd_cmd_autograd(int argc, char **argv);
int rpd_cmd_report(int argc, char **argv);
int rpd_cmd_merge(int argc, char **argv);
int rpd_cmd_trim(int argc, char **argv);
int rpd_cmd_index(int argc, char **argv);
int rpd_cmd_watch(int argc, char **argv);

#endif
