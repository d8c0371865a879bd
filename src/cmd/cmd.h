/* cmd: one entry point per subcommand (src/cmd/NAME.c), dispatched from the table in main.c.
 * Each takes argv starting at the subcommand's name and returns the process exit code. */
/* Layer cmd/ (the top): one file per subcommand, which only wires — parse options, get the snapshot
 * (common.c), call diagnose/free/plan, render, choose the exit code. Nothing includes cmd/. */
#ifndef GPUWHO_CMD_H
#define GPUWHO_CMD_H

/* Sets up stdout and stderr for every command: outside a UTF-8 locale, a stream that writes ASCII
 * stand-ins for the few non-ASCII signs gpuwho's texts use (render_ascii_stream). Call first. */
void cmd_setup_output(void);

/* Ends a command that returns rc: with --json, when it printed no JSON but reported errors
 * (cli_error), prints them as one JSON object on stdout, {"schema": "gpuwho.error", "errors":
 * [...], "exit_status": rc}, so that a script reading stdout is not left with nothing. Returns rc. */
int cmd_finish(int rc);

int cmd_ps(int argc, char **argv);
int cmd_holders(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_why(int argc, char **argv);
int cmd_free(int argc, char **argv);
int cmd_snapshot(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_metrics(int argc, char **argv);
int cmd_serve(int argc, char **argv);

#endif
