/*
 * fsd-sftp: messages to stderr, which is the journal under systemd and
 * the SSH server's log as a subsystem (the protocol owns stdout).
 */
#include "first.h"

#include <stdarg.h>
#include <stdio.h>

#include "contrib/sftpd/sftpd.h"

void sftpd_log(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("fsd-sftp: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}
