#include "first.h"

#include "daemon/fcache_body.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <fibril/async.h>

void fcb_blob_unref(void *blob)
{
	struct fcb_blob *b = blob;

	if (!--b->refs)
		free(b);
}

struct fcb_blob *fcb_read(int pfd, size_t size)
{
	char path[40];
	struct fcb_blob *b = malloc(sizeof *b + (size ? size : 1));
	size_t got = 0;
	long r = 0;

	snprintf(path, sizeof path, "/proc/self/fd/%d", pfd);
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (!b || fd < 0) {
		free(b);
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	while (got < size && (r = fibril_pread(fd, b->data + got, size - got, (int64_t)got)) > 0)
		got += (size_t)r;
	close(fd);
	if (got < size) {
		free(b);
		return NULL;
	}
	b->refs = 1;
	return b;
}

/* A large body kept as a shared mapping of the file, and the file. */
struct fcb_mapping { void *p; size_t len; int fd; };

static void mapping_free(void *cls)
{
	struct fcb_mapping *m = cls;

	munmap(m->p, m->len);
	close(m->fd);
	free(m);
}

struct MHD_Response *fcb_large(int fd, size_t len, const char **mapped)
{
	struct MHD_Response *resp;
	struct fcb_mapping *m;

	*mapped = NULL;
	if (len <= FCB_MAP_MAX && (m = malloc(sizeof *m))) {
		m->p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
		m->len = len;
		m->fd = fd;
		resp = m->p == MAP_FAILED ? NULL :
			MHD_create_response_from_buffer_with_free_callback_cls(len, m->p,
			                                                       mapping_free, m);
		if (resp) {
			*mapped = m->p;
			return resp;
		}
		if (m->p != MAP_FAILED)
			munmap(m->p, len);
		free(m);
	}
	resp = MHD_create_response_from_fd_at_offset64(len, fd, 0);
	if (!resp)
		close(fd);
	return resp;
}
