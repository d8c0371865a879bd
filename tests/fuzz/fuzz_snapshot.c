/* fuzz_snapshot: libFuzzer target for the snapshot loader (`make fuzz`, clang only; `make fuzz-run`).
 * Any input must load or fail with a message; a loaded snapshot must serialize again. */
#include "snapshot/snapshot.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct snapshot s;
	char *err = NULL;
	if (snapshot_from_json((const char *)data, size, &s, &err) == 0) {
		json_t *j = snapshot_to_json(&s, false);
		char *t = json_dumps(j, 0);
		free(t);
		json_decref(j);
	} else if (!err) {
		abort();   /* a failure must say why */
	}
	free(err);
	snapshot_free(&s);
	return 0;
}
