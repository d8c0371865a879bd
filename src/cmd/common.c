/* common: what several subcommands do the same way. */
#include "cmd/common.h"
#include "cmd/cmd.h"
#include "escape.h"
#include "json.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int cmd_get_snapshot(const struct cli *c, double resample_s, struct snapshot *out)
{
	if (!c->from) {
		struct snapshot_opts so = {.nvml_path = c->nvml_path, .no_nvml = c->no_nvml, .resample_s = resample_s};
		return snapshot_collect(&so, out);
	}
	char *err = NULL;
	if (snapshot_load(c->from, out, &err) == 0) {
		if (c->no_nvml)
			out->nvml_asked = false;
		return 0;
	}
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

char **cmd_gpu_args(const struct cli *c, char *const *operands, int n, int *nout)
{
	*nout = 0;
	if (n <= 0 && c->nids == 0)
		return NULL;
	char **v = xcalloc((size_t)(n > 0 ? n : 0) + (size_t)c->nids, sizeof *v);
	for (int i = 0; i < n; i++)
		v[(*nout)++] = operands[i];
	for (int i = 0; i < c->nids; i++)
		v[(*nout)++] = (char *)c->ids[i];
	return v;
}

/* The second memory sample why takes before calling memory a leak (the same delay). */
#define CMD_RESAMPLE_S 0.5

int cmd_get_diagnosis(const struct cli *c, bool full, struct snapshot *s, struct diagnosis *d)
{
	memset(d, 0, sizeof *d);
	if (c->from) {
		if (cmd_get_snapshot(c, 0, s) != 0)
			return EXIT_CANNOT;
		diagnose(s, d);
		return 0;
	}
	struct snapshot_opts so = {.nvml_path = c->nvml_path, .no_nvml = c->no_nvml, .lazy = !full};
	snapshot_collect(&so, s);
	diagnose(s, d);
	if (diag_wants_full_scan(s, d)) {
		diag_free(d);
		snapshot_free(s);
		so.lazy = false;
		snapshot_collect(&so, s);
		diagnose(s, d);
	}
	if (diag_wants_resample(s, d)) {
		snapshot_resample(s, c->nvml_path, CMD_RESAMPLE_S);
		diag_free(d);
		diagnose(s, d);
	}
	return 0;
}

int cmd_select_gpus(const struct cli *c, const struct account *a, char *const *operands, int nops, bool **sel)
{
	*sel = NULL;
	int n;
	char **sels = cmd_gpu_args(c, operands, nops, &n);
	if (n <= 0)
		return EXIT_FINE;
	*sel = xcalloc(a->ngpus + 1, sizeof **sel);
	int code = EXIT_FINE;
	for (int i = 0; i < n; i++) {
		char *m;
		if (account_select_list(a, sels[i], *sel, &m) == 0)
			continue;
		char *e = escape_term(m, strlen(m));
		cli_error(c, "%s", e);
		free(e);
		free(m);
		code = EXIT_USAGE;
	}
	free(sels);
	return code;
}

struct render_opts cmd_render_opts(const struct cli *c)
{
	int w = cli_text_width();
	return (struct render_opts){.color = cli_color(c), .width = w ? w : RENDER_DEFAULT_WIDTH, .cut = w > 0};
}

static bool printed_json;

void cmd_print_json(json_t *j)
{
	printed_json = true;
	json_dumpf(j, stdout, JSON_INDENT(2) | JSON_ENSURE_ASCII | JSON_REAL_PRECISION(12));
	fputc('\n', stdout);
	json_decref(j);
}

/* The streams cmd_setup_output put in place of stdout and stderr, and the originals. */
static FILE *ascii_out, *ascii_err, *orig_out, *orig_err;

/* At exit: flushes and closes the ASCII streams (freeing their state: LeakSanitizer counted it as
 * leaked, and failed every run outside a UTF-8 locale, such as a Slurm epilog's), and puts the
 * original streams back for whatever still writes after us. */
static void close_ascii_streams(void)
{
	if (ascii_out) {
		fclose(ascii_out);
		stdout = orig_out;
	}
	if (ascii_err) {
		fclose(ascii_err);
		stderr = orig_err;
	}
	ascii_out = ascii_err = NULL;
}

void cmd_setup_output(void)
{
	if (render_locale_is_utf8())
		return;
	FILE *out = render_ascii_stream(STDOUT_FILENO, isatty(STDOUT_FILENO) ? _IOLBF : _IOFBF);
	FILE *err = render_ascii_stream(STDERR_FILENO, _IONBF);
	orig_out = stdout;
	orig_err = stderr;
	if (out)
		stdout = ascii_out = out;
	if (err)
		stderr = ascii_err = err;
	if (out || err)
		atexit(close_ascii_streams);
}

int cmd_write_atomic(const char *path, const char *text, size_t len, mode_t mode)
{
	char *tmp = xasprintf("%s.tmp.XXXXXX", path);
	int fd = mkostemp(tmp, O_CLOEXEC);   /* mode 0600 until fchmod */
	if (fd < 0) {
		int e = errno;
		free(tmp);
		return -e;
	}
	int e = 0;
	for (size_t off = 0; off < len && !e;) {
		ssize_t n = write(fd, text + off, len - off);
		if (n < 0 && errno != EINTR)
			e = errno;
		else if (n > 0)
			off += (size_t)n;
	}
	if (!e && fchmod(fd, mode) < 0)
		e = errno;
	if (!e && fsync(fd) < 0)
		e = errno;
	if (close(fd) < 0 && !e)
		e = errno;
	if (!e && rename(tmp, path) < 0)
		e = errno;
	if (e)
		unlink(tmp);
	free(tmp);
	return -e;
}

int cmd_finish(int rc)
{
	size_t n;
	char *const *errs = cli_kept_errors(&n);
	if (n && !printed_json)
		cmd_print_json(json_pack("{s:s, s:i, s:o, s:i}", "schema", "gpuwho.error", "schema_version", 1, "errors",
					 json_strs(errs, n), "exit_status", rc));
	return rc;
}
