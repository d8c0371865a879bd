/* common: what several subcommands do the same way — get the snapshot, select GPUs, print JSON or
 * set up text output. Commands only wire: collect or load, diagnose or plan, render. */
#ifndef GPUWHO_CMD_COMMON_H
#define GPUWHO_CMD_COMMON_H

#include "cli.h"
#include "diagnose/account.h"
#include "diagnose/diagnose.h"
#include "render/render.h"
#include "snapshot/snapshot.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* The snapshot a read command works on: loaded from --from FILE, else collected live with the
 * NVML options of c and the given resample delay (0: one sample). --no-nvml with --from hides the
 * snapshot's NVML answer, as it would have been live. Returns 0; or prints "gpuwho CMD: FILE: why"
 * (escaped) and returns EXIT_CANNOT, leaving *out empty. */
int cmd_get_snapshot(const struct cli *c, double resample_s, struct snapshot *out);

/* The snapshot and its diagnosis for a command that runs often (check, metrics): collected lazily
 * (snapshot_opts.lazy: NVML first, the fd walk over NVML's PIDs only), diagnosed, and collected
 * again with the full walk only when diag_wants_full_scan says NVML shows memory it cannot tie to
 * a live listed process; then, like why, a second memory sample when a verdict rests on one.
 * From --from FILE, the file as it is. full: always walk every process (check --host).
 * Returns 0 with *s and *d filled (free both: diag_free first); or EXIT_CANNOT as
 * cmd_get_snapshot, with nothing to free. */
int cmd_get_diagnosis(const struct cli *c, bool full, struct snapshot *s, struct diagnosis *d);

/* The GPUs that operands[0..n) and c's -i options name (account_select_list: index, UUID or a
 * unique prefix, bus id, device path, comma lists, all). Sets *sel to NULL when there are none (no
 * selection: all), else to a malloc'ed array of a->ngpus flags. Returns EXIT_FINE; or prints one
 * error per selector that names no GPU (or several) and returns EXIT_USAGE (*sel still set: free it). */
int cmd_select_gpus(const struct cli *c, const struct account *a, char *const *operands, int n, bool **sel);

/* The GPU selectors of a command line: operands[0..n) then every -i value (c->ids), as one
 * malloc'ed array (*nout entries; NULL when none). Free the array, not the strings. */
char **cmd_gpu_args(const struct cli *c, char *const *operands, int n, int *nout);

/* Text output for c: colour when cli_color says so; lines fitted to cli_text_width(), or wrapped
 * at RENDER_DEFAULT_WIDTH with whole command lines when that is unknown (a pipe). */
struct render_opts cmd_render_opts(const struct cli *c);

/* Prints j to stdout as every --json does (indented, ASCII only, reals to 12 digits), then a
 * newline, and drops the reference. */
void cmd_print_json(json_t *j);

/* Writes text[0..len) to path through a temporary file in the same folder and rename(2), with
 * the given mode: a reader (a person, node_exporter's textfile collector) never sees half a file,
 * and an existing file is replaced whole or not at all. Returns 0 or -errno. */
int cmd_write_atomic(const char *path, const char *text, size_t len, mode_t mode);

#endif
