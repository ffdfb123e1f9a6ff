#include "first.h"

#include "daemon/daemon.h"
#include "daemon/mime.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proto/mime.h"

int fsd_mime_load(struct fsd_server *s, const char *path)
{
	int r = proto_mime_new(&s->mime, s->conf.default_type);
	FILE *f;
	char *text = NULL;
	size_t cap = 0, len = 0, n;

	if (r < 0)
		return r;
	/* Main thread, before the server's workers run: a plain read, of a
	 * regular file only (a FIFO would hold start-up or a reload, a
	 * device such as /dev/zero would fill the memory). */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	struct stat st;
	if (fd < 0)
		return -errno;
	r = 0;
	if (fstat(fd, &st) < 0)
		r = -errno;
	else if (!S_ISREG(st.st_mode))
		r = S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
	if (r < 0) {
		close(fd);
		return r;
	}
	f = fdopen(fd, "r");
	if (!f) {
		r = -errno;
		close(fd);
		return r;
	}
	for (;;) {
		if (len + 65536 > cap) {
			char *t = realloc(text, cap = cap ? cap * 2 : 262144);
			if (!t)
				break;
			text = t;
		}
		n = fread(text + len, 1, cap - len, f);
		if (!n)
			break;
		len += n;
	}
	fclose(f);
	if (text)
		proto_mime_load(s->mime, text, len);
	free(text);
	return 0;
}

void fsd_mime_free(struct fsd_server *s)
{
	if (s->mime)
		proto_mime_free(s->mime);
	s->mime = NULL;
}

const char *fsd_mime_type(const char *name)
{
	return proto_mime_lookup(fsd->mime, name, strlen(name));
}

/* Precompressed sidecars (FILE.br, FILE.zst, FILE.gz): the first one the
 * client accepts that exists, is a regular file and is not older than
 * FILE replaces it. */
const struct fsd_sidecar fsd_sidecars[FSD_NSIDECARS] = {
	{ ".br", "br" }, { ".zst", "zstd" }, { ".gz", "gzip" },
};
