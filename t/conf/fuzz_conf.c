/* libFuzzer harness: the configuration parser and validator. The input
 * is a configuration file; conf_load() takes a path, so the bytes go to
 * a memfd named through /proc/self/fd. Every error message must carry
 * "file:line: " (or "file: " from the validator), and the result must be
 * freed cleanly (the leak checker runs). */
#include "first.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "conf/conf.h"

static char path[64];

static void on_err(void *arg, const char *msg)
{
	size_t n = strlen(path);

	(*(int *)arg)++;
	if (strncmp(msg, path, n) || msg[n] != ':' || msg[n + 1] == 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int fd = -1;
	struct conf c;
	struct conf_listing l;
	int errors = 0, r;

	if (fd < 0) {
		fd = memfd_create("fuzz.conf", MFD_CLOEXEC);
		if (fd < 0)
			abort();
		snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	}
	if (ftruncate(fd, 0) < 0 || pwrite(fd, data, size, 0) != (ssize_t)size)
		abort();
	if (conf_init(&c) < 0)
		return 0;
	r = conf_load(&c, path, on_err, &errors);
	if (r < 0 || r != errors)
		abort();        /* the file exists; each error is reported */
	conf_validate(&c, on_err, &errors);
	conf_listing_for(&c, "/", &l);
	conf_listing_for(&c, "/a/b", &l);
	for (size_t i = 0; i < c.ndirs; i++) {
		if (!c.dirs[i].path || c.dirs[i].path[0] != '/')
			abort();
		conf_listing_for(&c, c.dirs[i].path, &l);
	}
	conf_free(&c);
	return 0;
}
