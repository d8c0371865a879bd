/* fake_nvml_old: the fake NVML as an old libnvidia-ml: only unversioned (v1) symbols, no MIG mode, no row remapping. */
/* The symbols a library lacks cannot be hidden at run time (dlsym sees every export), so absence
 * is a second build of the same source. Scenario format: see fake_nvml.c. */
#define FAKE_NVML_OLD 1
#include "fake_nvml.c"
