/* nvml_json: what nvml_collect found, as the "nvml" object of gpuwho's JSON (docs/json.md). */
#ifndef GPUWHO_NVML_JSON_H
#define GPUWHO_NVML_JSON_H

#include "nvml/nvml.h"

#include <jansson.h>

/* Returns a new JSON object (the caller owns the reference) describing info: the library, the
 * versions, each GPU with its fields and processes. A value NVML could not give is null, and the
 * GPU's "unavailable" object says why. Strings that are not UTF-8 are escaped (escape_utf8).
 * Never returns NULL (allocation failure aborts). */
json_t *nvml_info_to_json(const struct nvml_info *info);

#endif
