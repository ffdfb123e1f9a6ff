/*
 * Request validation adapter: feeds libmicrohttpd's parsed request to
 * the RFC 9112 checks (proto's reqcheck) one field at a time.
 */
#ifndef FSD_CHECK_H
#define FSD_CHECK_H

#include <stdbool.h>
#include <stddef.h>

struct fsd_check {
	const char *version;
	unsigned hosts, cls, tes, expects;
	unsigned status;                /* first problem found, 0 if none */
	bool close;
	long long cl;
};

void fsd_check_begin(struct fsd_check *c, const char *method,
                     const char *version, const char *target);
void fsd_check_field(struct fsd_check *c, const char *name, size_t nlen,
                     const char *value, size_t vlen);
/** Returns 0 or the status to answer with; *close when the connection
 *  must be closed after it. */
int fsd_check_end(struct fsd_check *c, bool *close);

#endif
