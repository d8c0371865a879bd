/* cli: the options every subcommand shares, exit codes, and the argument parser built on getopt_long. */
#include "cli.h"
#include "escape.h"
#include "util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

enum { OPT_JSON = 0x1000, OPT_FROM, OPT_NVML, OPT_NO_NVML, OPT_NO_COLOR, OPT_COLOR, OPT_HELP, OPT_FORMAT };

static const struct option common[] = {
	{"json", no_argument, NULL, OPT_JSON},
	{"from", required_argument, NULL, OPT_FROM},
	{"nvml", required_argument, NULL, OPT_NVML},
	{"no-nvml", no_argument, NULL, OPT_NO_NVML},
	{"no-color", no_argument, NULL, OPT_NO_COLOR},
	{"no-colour", no_argument, NULL, OPT_NO_COLOR},
	{"color", optional_argument, NULL, OPT_COLOR},
	{"colour", optional_argument, NULL, OPT_COLOR},
	{"help", no_argument, NULL, OPT_HELP},
};

static bool keep_errors;
static char **kept;
static size_t nkept;

void cli_keep_errors(bool on)
{
	keep_errors = on;
}

char *const *cli_kept_errors(size_t *n)
{
	*n = nkept;
	return kept;
}

void cli_error(const struct cli *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *m = xvasprintf(fmt, ap);
	va_end(ap);
	fprintf(stderr, "gpuwho%s%s: %s\n", c && c->cmd ? " " : "", c && c->cmd ? c->cmd : "", m);
	if (keep_errors && nkept < 64)
		strv_push(&kept, &nkept, m);
	else
		free(m);
}

/* "--color wants auto, always or never, not 'x'", with x escaped (it is the user's own, but a
 * pasted line can carry control bytes). */
static void bad_value(const struct cli *c, const char *opt, const char *want, const char *got)
{
	char *e = escape_term(got, strlen(got));
	cli_error(c, "%s wants %s, not '%s'", opt, want, e);
	free(e);
}

int cli_parse(struct cli *c, int argc, char **argv, const char *shortopts, const struct option *own,
	      cli_opt_fn fn, void *ctx, const char *usage)
{
	size_t nown = 0, ncommon = sizeof common / sizeof common[0];
	while (own && own[nown].name)
		nown++;
	struct option *all = xcalloc(nown + ncommon + 3, sizeof *all), *extra = all + ncommon + nown;
	memcpy(all, common, sizeof common);
	if (nown)
		memcpy(all + ncommon, own, nown * sizeof *own);
	if (c->gpus)
		*extra++ = (struct option){"id", required_argument, NULL, 'i'};
	if (c->tables)
		*extra++ = (struct option){"format", required_argument, NULL, OPT_FORMAT};
	/* Options may follow operands (gpuwho holders PATH --json); "--" ends them (plan -- CMD...).
	 * A leading ":" reports a missing argument distinctly. */
	char *so = xasprintf(":h%s%s", c->gpus ? "i:" : "", shortopts ? shortopts : "");
	int ret = 0;
	/* 0, not 1: glibc then resets its whole state, including the position inside a group of
	 * short options where an earlier parse stopped ("-hv" stops at h). */
	optind = 0;
	opterr = 0;
	for (;;) {
		int li = -1;
		int o = getopt_long(argc, argv, so, all, &li);
		if (o == -1)
			break;
		switch (o) {
		case OPT_JSON: c->json = true; continue;
		case OPT_FROM:
		case OPT_NVML:
		case OPT_NO_NVML:
			if (c->refuse & (o == OPT_FROM ? CLI_REFUSE_FROM : CLI_REFUSE_NVML)) {
				cli_error(c, "option '%s' does not apply to %s",
					  o == OPT_FROM ? "--from" : o == OPT_NVML ? "--nvml" : "--no-nvml",
					  c->cmd ? c->cmd : "this command");
				goto bad;
			}
			if (o == OPT_FROM)
				c->from = optarg;
			else if (o == OPT_NVML)
				c->nvml_path = optarg;
			else
				c->no_nvml = true;
			continue;
		case OPT_NO_COLOR: c->no_color = true; c->force_color = false; continue;
		case OPT_COLOR:
			if (!optarg || !strcmp(optarg, "always")) {
				c->force_color = true;
				c->no_color = false;
			} else if (!strcmp(optarg, "never")) {
				c->no_color = true;
				c->force_color = false;
			} else if (!strcmp(optarg, "auto")) {
				c->no_color = c->force_color = false;
			} else {
				bad_value(c, "--color", "auto, always or never", optarg);
				goto bad;
			}
			continue;
		case OPT_FORMAT:
			if (!strcmp(optarg, "text") || !strcmp(optarg, "json") || !strcmp(optarg, "csv")) {
				c->json = !strcmp(optarg, "json");
				c->csv = !strcmp(optarg, "csv");
				continue;
			}
			bad_value(c, "--format", "text, json or csv", optarg);
			goto bad;
		case 'i':
			if (c->nids == CLI_MAX_IDS) {
				cli_error(c, "more than %d -i options; give a comma list (-i 0,1,2)", CLI_MAX_IDS);
				goto bad;
			}
			c->ids[c->nids++] = optarg;
			continue;
		case 'h':
		case OPT_HELP:
			fputs(usage, stdout);
			ret = CLI_HELP;
			goto out;
		case '?': {
			/* "--json=1": getopt_long sets optopt to the flag's value (not a printable letter
			 * for the common options) and has consumed the argument; name the flag instead. */
			const char *a = argv[optind - 1], *eq = strchr(a, '=');
			const struct option *flag = NULL;
			if (optopt && eq && str_starts(a, "--"))
				for (const struct option *x = all; x->name; x++)
					if (x->val == optopt && x->has_arg == no_argument &&
					    !strncmp(x->name, a + 2, (size_t)(eq - a - 2)))
						flag = x;
			if (flag)
				cli_error(c, "option '--%s' takes no value", flag->name);
			else if (optopt)
				cli_error(c, "unknown option '-%c'", optopt);
			else
				cli_error(c, "unknown option '%s'", a);
			goto bad;
		}
		case ':':
			cli_error(c, "option '%s' needs a value", argv[optind - 1]);
			goto bad;
		default:
			if (fn && fn(o, optarg, ctx) == 0)
				continue;
			goto bad;
		}
	}
	ret = optind;
	goto out;
bad:
	fprintf(stderr, "Try 'gpuwho %s --help'.\n", c->cmd ? c->cmd : "");
	ret = CLI_BAD;
out:
	free(so);
	free(all);
	return ret;
}

int cli_common_arity(const char *arg)
{
	if (!str_starts(arg, "--"))
		return -1;
	const char *name = arg + 2, *eq = strchr(name, '=');
	size_t len = eq ? (size_t)(eq - name) : strlen(name);
	for (size_t i = 0; i < sizeof common / sizeof common[0]; i++)
		if (strlen(common[i].name) == len && !strncmp(common[i].name, name, len))
			return common[i].has_arg == required_argument && !eq ? 1 : 0;   /* optional: --color=WHEN */
	return -1;
}

int cli_exit_for(int r)
{
	return r == CLI_HELP ? EXIT_FINE : EXIT_USAGE;
}

bool cli_color(const struct cli *c)
{
	if (c->force_color)
		return true;
	const char *nc = getenv("NO_COLOR"), *term = getenv("TERM");
	if (c->no_color || (nc && *nc) || (term && !strcmp(term, "dumb")))
		return false;
	return isatty(STDOUT_FILENO);
}

int cli_text_width(void)
{
	struct winsize ws;
	if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
		return ws.ws_col;
	unsigned long long n;
	const char *c = getenv("COLUMNS");
	if (c && parse_uint(c, &n) && n >= 20 && n <= 10000)
		return (int)n;
	return 0;
}
