#include "first.h"

#include "daemon/daemon.h"

/* Every file of daemon/ reads it, so it lives below all of them. */
__thread const struct fsd_server *fsd;
