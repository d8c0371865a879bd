/* common: what several subcommands do the same way. */
#include "cmd/common.h"
#include "escape.h"

#include <stdlib.h>
#include <string.h>

int cmd_get_snapshot(const struct cli *c, double resample_s, struct snapshot *out)
{
	if (!c->from) {
		struct snapshot_opts so = {.nvml_path = c->nvml_path, .no_nvml = c->no_nvml, .resample_s = resample_s};
		return snapshot_collect(&so, out);
	}
	char *err = NULL;
	if (snapshot_load(c->from, out, &err) == 0)
		return 0;
	/* The path and the loader's message may quote the file's bytes. */
	char *p = escape_term(c->from, strlen(c->from));
	char *e = escape_term(err ? err : "unreadable", strlen(err ? err : "unreadable"));
	cli_error(c, "%s: %s", p, e);
	free(p);
	free(e);
	free(err);
	snapshot_free(out);
	return EXIT_CANNOT;
}
