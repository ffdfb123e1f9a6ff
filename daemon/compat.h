/* Stand-ins until proto/ lands; to be replaced by proto/ calls. */
#ifndef FSD_COMPAT_H
#define FSD_COMPAT_H
#include <stddef.h>
#include <time.h>
#include <linux/stat.h>
int fsd_url_path(const char *target, char *out, size_t outsz);
void fsd_httpdate(time_t t, char buf[32]);
void fsd_etag(const struct statx *st, const char *suffix, char buf[80]);
#endif
