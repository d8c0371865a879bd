/* snapshot/internal.h: what the snapshot module's own files share (collect.c, write.c, load.c);
 * nothing outside src/snapshot/ includes it. */
#ifndef GPUWHO_SNAPSHOT_INTERNAL_H
#define GPUWHO_SNAPSHOT_INTERNAL_H

#define SNAPSHOT_REDACTED "<redacted>"
#define SNAPSHOT_PID_MAX (1 << 30)   /* the holder engine's bound on a /proc entry's number */

/* The JSON names of the HOLD_* bits, in bit order (write.c). */
extern const char *const snapshot_means_names[4];

#endif
