#include "first.h"

#include "daemon/daemon.h"

/* Set up by main() before the workers start; every file of daemon/
 * reads it, so it lives below all of them. */
struct fsd_server fsd = { .rootfd = -1 };
