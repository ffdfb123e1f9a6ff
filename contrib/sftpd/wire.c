/* fsd-sftp: SFTP v3 encoding and decoding (see wire.h). */
#include "first.h"

#include <errno.h>
#include <limits.h>
#include <string.h>

#include "contrib/sftpd/wire.h"

static const uint8_t *sftpd__take(struct sw_reader *r, size_t n)
{
	if (r->bad || r->n < n) {
		r->bad = true;
		return NULL;
	}
	const uint8_t *p = r->p;
	r->p += n;
	r->n -= n;
	return p;
}

uint8_t sw_u8(struct sw_reader *r)
{
	const uint8_t *p = sftpd__take(r, 1);
	return p ? p[0] : 0;
}

uint32_t sw_u32(struct sw_reader *r)
{
	const uint8_t *p = sftpd__take(r, 4);
	return p ? (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	           (uint32_t)p[2] << 8 | p[3] : 0;
}

uint64_t sw_u64(struct sw_reader *r)
{
	uint64_t hi = sw_u32(r);
	return hi << 32 | sw_u32(r);
}

const uint8_t *sw_str(struct sw_reader *r, uint32_t *len)
{
	uint32_t n = sw_u32(r);
	const uint8_t *p = sftpd__take(r, n);
	*len = p ? n : 0;
	return p;
}

char *sw_path(struct sw_reader *r, TALLOC_CTX *mem)
{
	uint32_t n;
	const uint8_t *p = sw_str(r, &n);

	if (!p || n > PATH_MAX || memchr(p, 0, n)) {
		r->bad = true;
		return NULL;
	}
	char *s = talloc_strndup(mem, (const char *)p, n);
	if (!s)
		r->bad = true;
	return s;
}

void sw_skip_attrs(struct sw_reader *r)
{
	uint32_t flags = sw_u32(r);
	if (flags & SSH_FILEXFER_ATTR_SIZE)
		(void)sw_u64(r);
	if (flags & SSH_FILEXFER_ATTR_UIDGID)
		(void)sftpd__take(r, 8);
	if (flags & SSH_FILEXFER_ATTR_PERMISSIONS)
		(void)sw_u32(r);
	if (flags & SSH_FILEXFER_ATTR_ACMODTIME)
		(void)sftpd__take(r, 8);
	if (flags & SSH_FILEXFER_ATTR_EXTENDED) {
		uint32_t count = sw_u32(r), len;
		/* Each pair takes at least 8 bytes: the count cannot make us
		 * loop longer than the packet is. */
		for (uint32_t i = 0; i < count && !r->bad; i++) {
			(void)sw_str(r, &len);
			(void)sw_str(r, &len);
		}
	}
}

static uint8_t *sftpd__room(struct sw_buf *w, size_t n)
{
	if (w->oom)
		return NULL;
	if (w->cap - w->len < n) {
		size_t cap = w->cap ? w->cap : 4096;
		while (cap - w->len < n)
			cap *= 2;
		uint8_t *b = talloc_realloc_size(NULL, w->b, cap);
		if (!b) {
			w->oom = true;
			return NULL;
		}
		w->b = b;
		w->cap = cap;
	}
	uint8_t *p = w->b + w->len;
	w->len += n;
	return p;
}

void sw_put_u8(struct sw_buf *w, uint8_t v)
{
	uint8_t *p = sftpd__room(w, 1);
	if (p)
		*p = v;
}

static void sftpd__be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

void sw_put_u32(struct sw_buf *w, uint32_t v)
{
	uint8_t *p = sftpd__room(w, 4);
	if (p)
		sftpd__be32(p, v);
}

void sw_put_u64(struct sw_buf *w, uint64_t v)
{
	sw_put_u32(w, (uint32_t)(v >> 32));
	sw_put_u32(w, (uint32_t)v);
}

void sw_put_str(struct sw_buf *w, const void *s, size_t n)
{
	sw_put_u32(w, (uint32_t)n);
	uint8_t *p = sftpd__room(w, n);
	if (p && n)
		memcpy(p, s, n);
}

size_t sw_begin(struct sw_buf *w, uint8_t type, uint32_t id, bool with_id)
{
	size_t start = w->len;
	sw_put_u32(w, 0);
	sw_put_u8(w, type);
	if (with_id)
		sw_put_u32(w, id);
	return start;
}

void sw_end(struct sw_buf *w, size_t start)
{
	if (!w->oom)
		sftpd__be32(w->b + start, (uint32_t)(w->len - start - 4));
}

void sw_compact(struct sw_buf *w)
{
	if (w->off == 0)
		return;
	memmove(w->b, w->b + w->off, w->len - w->off);
	w->len -= w->off;
	w->off = 0;
}

uint32_t sw_errno_status(int err)
{
	switch (err) {
	case 0:
		return SSH_FX_OK;
	case ENOENT: case ENOTDIR: case EBADF: case ELOOP:
		return SSH_FX_NO_SUCH_FILE;
	case EPERM: case EACCES: case EFAULT: case EXDEV: case EROFS:
		return SSH_FX_PERMISSION_DENIED;
	case ENAMETOOLONG: case EINVAL:
		return SSH_FX_BAD_MESSAGE;
	case ENOSYS: case EOPNOTSUPP:
		return SSH_FX_OP_UNSUPPORTED;
	default:
		return SSH_FX_FAILURE;
	}
}
