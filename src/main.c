/* main: global flags (--help, --version) and dispatch to the subcommand table. */
#include "cli.h"
#include "cmd/cmd.h"

#include <signal.h>
#include <stdio.h>
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
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE *f)
{
	fprintf(f,
		"gpuwho — who holds each NVIDIA GPU, why its memory is still in use, and how to free it safely.\n"
		"\n"
		"Usage: gpuwho [COMMAND] [OPTIONS] [ARGS]\n"
		"\n"
		"Commands:\n");
	for (size_t i = 0; i < NCOMMANDS; i++)
		fprintf(f, "  %-9s %s%s\n", commands[i].name, commands[i].summary, i == 0 ? " (default)" : "");
	fprintf(f,
		"\n"
		"Run 'gpuwho COMMAND --help' for a command's options and examples.\n"
		"  --version        print the version and exit\n"
		"\n"
		"Exit status: 0 fine, 1 a problem was found, 2 bad usage, 3 nothing could be inspected.\n");
}

int main(int argc, char **argv)
{
	/* A closed pipe (gpuwho | head) must end us quietly, not with an error per line. */
	signal(SIGPIPE, SIG_DFL);
	if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help"))) {
		usage(stdout);
		return EXIT_FINE;
	}
	if (argc >= 2 && !strcmp(argv[1], "--version")) {
		printf("gpuwho %s\n", GPUWHO_VERSION);
		return EXIT_FINE;
	}
	if (argc >= 2 && argv[1][0] != '-') {
		for (size_t i = 0; i < NCOMMANDS; i++)
			if (!strcmp(argv[1], commands[i].name))
				return commands[i].fn(argc - 1, argv + 1);
		fprintf(stderr, "gpuwho: unknown command '%s'\n", argv[1]);
		usage(stderr);
		return EXIT_USAGE;
	}
	/* No command: the default one, with argv[0] standing in for its name. */
	argv[0] = (char *)commands[0].name;
	return commands[0].fn(argc, argv);
}
