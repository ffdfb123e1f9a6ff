#ifndef FSD_RESIDENT_H
#define FSD_RESIDENT_H

#include <stdbool.h>
#include <stdint.h>

/* Is [off, off+len) of @fd in the page cache (sendfile on the loop
 * would not wait for the disk)? True for an empty range. One system
 * call, never blocks. */
bool fsd_resident(int fd, uint64_t off, uint64_t len);

#endif
