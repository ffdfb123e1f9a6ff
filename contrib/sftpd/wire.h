/*
 * fsd-sftp: the SFTP wire format (draft-ietf-secsh-filexfer-02, version
 * 3). Reading is bounds-checked on every field: a short or overlong
 * field sets `bad` and every later read returns zero, so a handler reads
 * all its fields and checks `bad` once. No I/O here.
 */
#ifndef SFTPD_WIRE_H
#define SFTPD_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <talloc.h>

enum {
	SSH_FXP_INIT = 1, SSH_FXP_VERSION = 2, SSH_FXP_OPEN = 3,
	SSH_FXP_CLOSE = 4, SSH_FXP_READ = 5, SSH_FXP_WRITE = 6,
	SSH_FXP_LSTAT = 7, SSH_FXP_FSTAT = 8, SSH_FXP_SETSTAT = 9,
	SSH_FXP_FSETSTAT = 10, SSH_FXP_OPENDIR = 11, SSH_FXP_READDIR = 12,
	SSH_FXP_REMOVE = 13, SSH_FXP_MKDIR = 14, SSH_FXP_RMDIR = 15,
	SSH_FXP_REALPATH = 16, SSH_FXP_STAT = 17, SSH_FXP_RENAME = 18,
	SSH_FXP_READLINK = 19, SSH_FXP_SYMLINK = 20,
	SSH_FXP_STATUS = 101, SSH_FXP_HANDLE = 102, SSH_FXP_DATA = 103,
	SSH_FXP_NAME = 104, SSH_FXP_ATTRS = 105,
	SSH_FXP_EXTENDED = 200, SSH_FXP_EXTENDED_REPLY = 201
};

enum {
	SSH_FX_OK = 0, SSH_FX_EOF = 1, SSH_FX_NO_SUCH_FILE = 2,
	SSH_FX_PERMISSION_DENIED = 3, SSH_FX_FAILURE = 4,
	SSH_FX_BAD_MESSAGE = 5, SSH_FX_NO_CONNECTION = 6,
	SSH_FX_CONNECTION_LOST = 7, SSH_FX_OP_UNSUPPORTED = 8
};

#define SSH_FILEXFER_ATTR_SIZE        0x00000001u
#define SSH_FILEXFER_ATTR_UIDGID      0x00000002u
#define SSH_FILEXFER_ATTR_PERMISSIONS 0x00000004u
#define SSH_FILEXFER_ATTR_ACMODTIME   0x00000008u
#define SSH_FILEXFER_ATTR_EXTENDED    0x80000000u

#define SSH_FXF_READ   0x01u
#define SSH_FXF_WRITE  0x02u
#define SSH_FXF_APPEND 0x04u
#define SSH_FXF_CREAT  0x08u
#define SSH_FXF_TRUNC  0x10u
#define SSH_FXF_EXCL   0x20u

/** Largest packet accepted or sent (the length field's value), as
 *  OpenSSH's sftp-server and client. */
#define SFTP_MAX_PACKET (256u * 1024u)

struct sw_reader {
	const uint8_t *p;
	size_t n;
	bool bad;
};

uint8_t sw_u8(struct sw_reader *r);
uint32_t sw_u32(struct sw_reader *r);
uint64_t sw_u64(struct sw_reader *r);
/** A string: its bytes in the packet (not NUL-terminated) and length. */
const uint8_t *sw_str(struct sw_reader *r, uint32_t *len);
/** A string holding a path: copied, NUL-terminated, a child of @mem;
 *  an embedded NUL or a path longer than PATH_MAX sets `bad`. */
char *sw_path(struct sw_reader *r, TALLOC_CTX *mem);
/** Skips v3 attributes (validating their lengths). */
void sw_skip_attrs(struct sw_reader *r);

/** An output buffer of whole packets. */
struct sw_buf {
	uint8_t *b;
	size_t len, cap;  /* bytes held, allocated */
	size_t off;       /* bytes already written out */
	bool oom;
};

void sw_put_u8(struct sw_buf *w, uint8_t v);
void sw_put_u32(struct sw_buf *w, uint32_t v);
void sw_put_u64(struct sw_buf *w, uint64_t v);
void sw_put_str(struct sw_buf *w, const void *s, size_t n);
/** Starts a packet of @type (with @id unless VERSION); returns its start. */
size_t sw_begin(struct sw_buf *w, uint8_t type, uint32_t id, bool with_id);
/** Fills in the length of the packet started at @start. */
void sw_end(struct sw_buf *w, size_t start);
/** Drops what was written out; keeps the buffer. */
void sw_compact(struct sw_buf *w);

/** errno (positive) to an SSH_FX_* status. */
uint32_t sw_errno_status(int err);

#endif
