/*
 * fsd-sftp: what every request's completion shares: status and
 * attribute replies, and the mapping of a client's path to one beneath
 * the root. Nothing here closes or owns a descriptor (handle.c and
 * close.c do, and call in here).
 */
#include "first.h"

#include <string.h>

#include "contrib/sftpd/sftpd.h"

void sftpd_status(struct sreq *r, uint32_t code, const char *msg)
{
	struct sw_buf *w = &r->c->out;
	size_t at = sw_begin(w, SSH_FXP_STATUS, r->id, true);

	sw_put_u32(w, code);
	sw_put_str(w, msg, strlen(msg));
	sw_put_str(w, "", 0);
	sw_end(w, at);
	sftpd_req_done(r);
}

void sftpd_status_errno(struct sreq *r, int err)
{
	sftpd_status(r, sw_errno_status(err), strerror(err));
}

void sftpd_put_attrs(struct sw_buf *w, const struct statx *stx)
{
	uint64_t at = (stx->stx_mask & STATX_ATIME) ? stx->stx_atime.tv_sec :
	              stx->stx_mtime.tv_sec;

	sw_put_u32(w, SSH_FILEXFER_ATTR_SIZE | SSH_FILEXFER_ATTR_UIDGID |
	              SSH_FILEXFER_ATTR_PERMISSIONS | SSH_FILEXFER_ATTR_ACMODTIME);
	sw_put_u64(w, stx->stx_size);
	sw_put_u32(w, stx->stx_uid);
	sw_put_u32(w, stx->stx_gid);
	sw_put_u32(w, stx->stx_mode);
	sw_put_u32(w, (uint32_t)at);
	sw_put_u32(w, (uint32_t)stx->stx_mtime.tv_sec);
}

/* ---- paths ---- */

char *sftpd_relpath(TALLOC_CTX *mem, const char *path)
{
	size_t n = strlen(path);
	char *out = talloc_size(mem, n + 2);
	size_t len = 0;

	if (!out)
		return NULL;
	for (const char *p = path; *p;) {
		while (*p == '/')
			p++;
		const char *s = p;
		while (*p && *p != '/')
			p++;
		size_t k = (size_t)(p - s);
		if (k == 0 || (k == 1 && s[0] == '.'))
			continue;
		if (k == 2 && s[0] == '.' && s[1] == '.') {
			/* Lexically, and never above the root (as in a chroot). */
			while (len > 0 && out[len - 1] != '/')
				len--;
			if (len > 0)
				len--;
			continue;
		}
		if (len)
			out[len++] = '/';
		memcpy(out + len, s, k);
		len += k;
	}
	if (len == 0)
		out[len++] = '.';
	out[len] = 0;
	return out;
}

const struct lk_lookup_opts *sftpd_lopts(struct sreq *r, int oflags)
{
	struct sftpd *s = r->c->srv;

	if (!s->cred && !s->icase)
		return NULL;
	r->lo = (struct lk_lookup_opts){
		.oflags = oflags,
		.flags = s->icase ? LK_LOOKUP_NOCASE : 0,
		.cred = s->cred,
	};
	return &r->lo;
}
