/* common: what several subcommands do the same way. */
#ifndef GPUWHO_CMD_COMMON_H
#define GPUWHO_CMD_COMMON_H

#include "cli.h"
#include "snapshot/snapshot.h"

/* The snapshot a read command works on: loaded from --from FILE, else collected live with the
 * NVML options of c and the given resample delay (0: one sample). Returns 0; or prints
 * "gpuwho CMD: FILE: why" (escaped) and returns EXIT_CANNOT, leaving *out empty. */
int cmd_get_snapshot(const struct cli *c, double resample_s, struct snapshot *out);

#endif
