/* main: global flags (--help, --version), common options before the command, `help CMD`, a
 * suggestion for a mistyped command, and dispatch to the subcommand table. */
#include "cli.h"
#include "cmd/cmd.h"
#include "escape.h"

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
};

/* The first entry is what a bare `gpuwho` (or `gpuwho --json`, etc.) runs. */
static const struct command commands[] = {
	{"ps", cmd_ps, "every GPU: memory used/total, each holder with its memory, the unattributed MiB"},
	{"why", cmd_why, "verdict per GPU: why its memory is in use, the evidence, the exact fix"},
	{"free", cmd_free, "safe cleanup of GPUs: the plan (dry run) unless --yes; verifies the memory came back"},
	{"holders", cmd_holders, "who holds these files (default: every NVIDIA device node): a better fuser"},
	{"plan", cmd_plan, "pre-flight of an SGLang/vLLM launch: GPU and host memory per rank, KV tokens, concurrency"},
	{"check", cmd_check, "health check for schedulers (Slurm epilog, NHC): silent and 0 when clean, one line per bad GPU"},
	{"snapshot", cmd_snapshot, "everything collected, as one JSON file (replay it with --from FILE)"},
	{"metrics", cmd_metrics, "Prometheus text of the GPUs' memory and findings (node_exporter textfile collector)"},
	{"serve", cmd_serve, "the same over HTTP for Prometheus (/metrics, /healthz), loopback by default"},
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE *f)
{
	fprintf(f,
		"gpuwho — who holds each NVIDIA GPU, why its memory is still in use, and how to free it safely.\n"
		"\n"
		"Usage: gpuwho [COMMON OPTIONS] [COMMAND] [OPTIONS] [ARGS]\n"
		"\n"
		"Commands:\n");
	for (size_t i = 0; i < NCOMMANDS; i++)
		fprintf(f, "  %-9s %s%s\n", commands[i].name, commands[i].summary, i == 0 ? " (default)" : "");
	fprintf(f,
		"\n"
		"Run 'gpuwho help COMMAND' (or 'gpuwho COMMAND --help') for a command's options and examples.\n"
		"Common options (--json, --nvml PATH, --no-nvml, --from FILE, --color[=WHEN]) go before or after\n"
		"the command: 'gpuwho --json why' is 'gpuwho why --json'.\n"
		"  -V, --version    print the version and exit\n"
		"\n"
		"Exit status: 0 fine, 1 a problem was found, 2 bad usage, 3 nothing could be inspected.\n");
}

static const struct command *find_command(const char *name)
{
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (!strcmp(name, commands[i].name))
			return &commands[i];
	return NULL;
}

/* Edit distance between a and b (insertions, deletions, substitutions, adjacent swaps), capped at
 * 9: enough to tell a typo (pss, wyh) from another word. */
static unsigned distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	if (la > 16 || lb > 16)
		return 9;
	unsigned d[17][17];
	for (size_t i = 0; i <= la; i++)
		d[i][0] = (unsigned)i;
	for (size_t j = 0; j <= lb; j++)
		d[0][j] = (unsigned)j;
	for (size_t i = 1; i <= la; i++)
		for (size_t j = 1; j <= lb; j++) {
			unsigned best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
			if (d[i - 1][j] + 1 < best)
				best = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < best)
				best = d[i][j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < best)
				best = d[i - 2][j - 2] + 1;
			d[i][j] = best;
		}
	return d[la][lb] > 9 ? 9 : d[la][lb];
}

static int unknown_command(const char *name)
{
	const struct command *near = NULL;
	unsigned best = 3;   /* at most two edits away */
	for (size_t i = 0; i < NCOMMANDS; i++) {
		unsigned d = distance(name, commands[i].name);
		if (d < best) {
			best = d;
			near = &commands[i];
		}
	}
	char *e = escape_term(name, strlen(name));
	cli_error(NULL, "unknown command '%s'", e);
	free(e);
	if (near)
		fprintf(stderr, "Did you mean 'gpuwho %s'?\n", near->name);
	fprintf(stderr, "Run 'gpuwho --help' for the list of commands.\n");
	return EXIT_USAGE;
}

/* A word that can only be a GPU selector: an index or list (0, 0,1), a UUID, a device path, all. */
static bool looks_like_gpu(const char *w)
{
	return (w[0] >= '0' && w[0] <= '9') || !strncmp(w, "GPU-", 4) || !strncmp(w, "MIG-", 4) ||
	       !strncmp(w, "/dev/", 5) || !strcmp(w, "all");
}

/* `gpuwho help [COMMAND]` and `gpuwho --help COMMAND`. */
static int help(const char *name)
{
	if (!name) {
		usage(stdout);
		return EXIT_FINE;
	}
	const struct command *c = find_command(name);
	if (!c)
		return unknown_command(name);
	char *argv[] = {(char *)c->name, "--help", NULL};
	return c->fn(2, argv);
}

int main(int argc, char **argv)
{
	/* A closed pipe (gpuwho | head) must end us quietly, not with an error per line. */
	signal(SIGPIPE, SIG_DFL);
	cmd_setup_output();
	/* With --json anywhere before "--", errors also go to stdout as JSON (cmd_finish). */
	for (int k = 1; k < argc && strcmp(argv[k], "--"); k++)
		if (!strcmp(argv[k], "--json"))
			cli_keep_errors(true);
	/* Common options before the command (gpuwho --json --nvml PATH why): skip over them to find
	 * the command; they are handed to it after its name, where its parser reads them. */
	int i = 1;
	while (i < argc) {
		const char *a = argv[i];
		if (!strcmp(a, "--help") || !strcmp(a, "-h") || !strcmp(a, "help"))
			return help(i + 1 < argc ? argv[i + 1] : NULL);
		if (!strcmp(a, "--version") || !strcmp(a, "-V")) {
			printf("gpuwho %s\n", GPUWHO_VERSION);
			return EXIT_FINE;
		}
		int arity = cli_common_arity(a);
		if (arity < 0)
			break;
		i += 1 + arity;
	}
	const struct command *cmd = &commands[0];   /* no command: the default one */
	int rest = i;
	if (i < argc && argv[i][0] != '-') {
		cmd = find_command(argv[i]);
		if (!cmd) {
			/* A GPU selector is an operand of the default command (gpuwho 0 is gpuwho ps 0);
			 * any other word is a mistyped command. */
			if (!looks_like_gpu(argv[i]))
				return cmd_finish(unknown_command(argv[i]));
			cmd = &commands[0];
		} else {
			rest = i + 1;
		}
	}
	if (i > argc)   /* a trailing common option lacks its value: let the command's parser say so */
		i = rest = argc;
	/* argv for the command: its name, the leading common options, then the rest. */
	char **nargv = calloc((size_t)argc + 1, sizeof *nargv);
	if (!nargv)
		return EXIT_CANNOT;
	int n = 0;
	nargv[n++] = (char *)cmd->name;
	for (int k = 1; k < i; k++)
		nargv[n++] = argv[k];
	for (int k = rest; k < argc; k++)
		nargv[n++] = argv[k];
	int rc = cmd->fn(n, nargv);
	free(nargv);
	return cmd_finish(rc);
}
