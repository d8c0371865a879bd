/* holders: who holds these files (default: every NVIDIA device node). */
#include "cli.h"
#include "cmd/cmd.h"

#include <stddef.h>

int cmd_holders(int argc, char **argv)
{
	struct cli c = {.cmd = "holders"};
	int r = cli_parse(&c, argc, argv, "", NULL, NULL, NULL, "Usage: gpuwho holders [PATH...]\n");
	if (r < 0)
		return cli_exit_for(r);
	return EXIT_CANNOT;
}
