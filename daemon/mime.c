#include "first.h"

#include "daemon/daemon.h"
#include "daemon/mime.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/mime.h"

static struct proto_mime *mime;

int fsd_mime_load(const char *path)
{
	int r = proto_mime_new(&mime, fsd->conf.default_type);
	FILE *f;
	char *text = NULL;
	size_t cap = 0, len = 0, n;

	if (r < 0)
		return r;
	/* Start-up only (main thread, before the workers): a plain read. */
	f = fopen(path, "re");
	if (!f)
		return -errno;
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
		proto_mime_load(mime, text, len);
	free(text);
	return 0;
}

const char *fsd_mime_type(const char *name)
{
	return proto_mime_lookup(mime, name, strlen(name));
}

/* Precompressed sidecars (FILE.br, FILE.zst, FILE.gz): the first one the
 * client accepts that exists, is a regular file and is not older than
 * FILE replaces it. */
const struct fsd_sidecar fsd_sidecars[FSD_NSIDECARS] = {
	{ ".br", "br" }, { ".zst", "zstd" }, { ".gz", "gzip" },
};
