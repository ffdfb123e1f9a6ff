/* t/slowfs/dirops.h: see dirops.c. */
#ifndef SLOWFS_DIROPS_H
#define SLOWFS_DIROPS_H

#include "t/slowfs/delay.h"   /* FUSE_USE_VERSION, <fuse_lowlevel.h> */

/* After fuse_session_mount(), before the loop: the INIT reply will carry
 * FUSE_PARALLEL_DIROPS when the kernel offers it. 0 or -errno. */
int sfs_parallel_dirops(struct fuse_session *se);

#endif
