/*
 * t/sftpd/oom_shim.c: an LD_PRELOAD library for t/sftpd/oom.sh. malloc
 * and realloc of more than FSD_TEST_MAX_ALLOC bytes fail with ENOMEM,
 * so that a reply buffer growing past it fails the way it would when
 * memory runs out, while everything smaller works. glibc only (it calls
 * glibc's own allocator underneath, which dlsym would itself need).
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

extern void *__libc_malloc(size_t n);
extern void *__libc_realloc(void *p, size_t n);

static size_t shim_limit(void)
{
	static size_t limit;

	if (!limit) {
		const char *v = getenv("FSD_TEST_MAX_ALLOC");
		limit = v ? strtoull(v, NULL, 10) : 0;
		if (!limit)
			limit = (size_t)-1;
	}
	return limit;
}

void *malloc(size_t n)
{
	if (n > shim_limit()) {
		errno = ENOMEM;
		return NULL;
	}
	return __libc_malloc(n);
}

void *realloc(void *p, size_t n)
{
	if (n > shim_limit()) {
		errno = ENOMEM;
		return NULL;
	}
	return __libc_realloc(p, n);
}
