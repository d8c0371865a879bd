/* cli: the options every subcommand shares, exit codes, and the argument parser built on getopt_long. */
#ifndef GPUWHO_CLI_H
#define GPUWHO_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>

/* Exit codes (DESIGN.md): only cmd_* functions and main choose them. */
enum {
	EXIT_FINE = 0,     /* nothing wrong */
	EXIT_PROBLEM = 1,  /* a problem was found (why, free that could not free, plan that does not fit) */
	EXIT_USAGE = 2,    /* bad command line */
	EXIT_CANNOT = 3,   /* cannot inspect (nothing could be read) */
};

#define CLI_MAX_IDS 64

/* Options common to every subcommand. */
struct cli {
	const char *cmd;       /* subcommand name, for messages */
	bool json;             /* --json */
	const char *from;      /* --from FILE: replay a snapshot */
	const char *nvml_path; /* --nvml PATH */
	bool no_nvml;          /* --no-nvml */
	bool no_color;         /* --no-color, --color=never */
	bool force_color;      /* --color, --color=always */
	bool gpus;             /* set by a command that takes GPU selectors: it accepts -i/--id SEL
				* (nvidia-smi's spelling), collected in ids[] */
	const char *ids[CLI_MAX_IDS];
	int nids;
	bool tables;           /* set by a command whose output is a table (ps, holders): it accepts
				* --format text|json|csv */
	bool csv;              /* --format csv */
	unsigned refuse;       /* CLI_REFUSE_* bits, set by a command: common options it has no use for,
				* which cli_parse refuses instead of ignoring */
};

enum { CLI_REFUSE_FROM = 1, CLI_REFUSE_NVML = 2 };

/* Called for each option that is not a common one; returns 0 when accepted, or prints why not
 * (one line, to stderr) and returns -1. */
typedef int (*cli_opt_fn)(int opt, const char *arg, void *ctx);

/* Parses argv with the common options plus `own` (terminated by a zero entry) and `shortopts`
 * (which need not list the common -h). Prints `usage` for -h/--help and returns CLI_HELP; prints
 * a one-line error and a hint for a bad option and returns CLI_BAD. Otherwise returns optind:
 * the index of the first operand. A "--" ends the options. */
enum { CLI_HELP = -1, CLI_BAD = -2 };
int cli_parse(struct cli *c, int argc, char **argv, const char *shortopts, const struct option *own,
	      cli_opt_fn fn, void *ctx, const char *usage);

/* Whether arg is one of the common options: -1 no; 0 a flag, or an option with its value in the
 * same word ("--nvml=PATH"); 1 an option whose value is the next word ("--nvml PATH"). For main,
 * which moves common options given before the command (gpuwho --json why) after it. */
int cli_common_arity(const char *arg);

/* The exit code cli_parse's result calls for when it is not an operand index. */
int cli_exit_for(int parse_result);

/* True when colour should be used on stdout: --color=always; else never with --no-color or
 * --color=never, NO_COLOR set (no-color.org), or TERM=dumb; else when stdout is a terminal. */
bool cli_color(const struct cli *c);

/* Terminal columns for text output: the tty's width, else $COLUMNS when set (20..10000); 0 (do
 * not cut) otherwise. */
int cli_text_width(void);

/* Prints "gpuwho CMD: message" to stderr (c may be NULL: "gpuwho: message"); with
 * cli_keep_errors on, also keeps the message for cmd_finish to print as JSON. */
void cli_error(const struct cli *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Turns on keeping cli_error's messages: main does, when --json is on the command line, so that a
 * script reading stdout gets the error as JSON (cmd_finish) instead of nothing. */
void cli_keep_errors(bool on);

/* The messages kept since cli_keep_errors(true), in order; *n of them. */
char *const *cli_kept_errors(size_t *n);

/* Common options' long names, for usage texts. */
#define CLI_COMMON_HELP \
	"Common options:\n" \
	"  --json           machine-readable output (schema: docs/json.md)\n" \
	"  --color[=WHEN]   colour: auto (default: on a terminal, unless NO_COLOR is set or\n" \
	"                   TERM=dumb), always, never; --no-color is --color=never\n" \
	"  -h, --help       this text\n"

/* The --format option of ps and holders, for their usage texts. */
#define CLI_FORMAT_HELP \
	"  --format FMT     text (default), json (the same as --json) or csv: a header row, then one\n" \
	"                   row per process, for spreadsheets and awk (RFC 4180 quoting)\n"

/* What a GPU selector may be (account_select_list), for the usage texts of commands that take them. */
#define CLI_GPU_SELECTORS_HELP \
	"GPU selectors, as nvidia-smi -i and CUDA_VISIBLE_DEVICES write them: an index (0), a UUID\n" \
	"(GPU-..., a unique prefix will do), a PCI bus id (0000:65:00.0 or 65:00.0, any case), a\n" \
	"device path (/dev/nvidia0), a MIG device (MIG-... or GPU:GI:CI, e.g. 0:1:0: the GPU it is\n" \
	"part of), a comma list of these (0,1), or all.\n"

/* The -i option of commands that take GPU selectors, for their usage texts. */
#define CLI_GPU_ID_HELP \
	"  -i, --id GPU     select a GPU, as nvidia-smi -i does (repeatable; same as an operand)\n"

#endif
