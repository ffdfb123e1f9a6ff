#include "first.h"

#include "daemon/notify.h"
#include "daemon/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#ifdef HAVE_LIBSYSTEMD
#include <systemd/sd-daemon.h>

/* A service manager that cannot be told we are ready ends up killing
 * us at TimeoutStartSec: say why in the log, once per kind of message. */
static void nt_send(const char *msg)
{
	int r = sd_notify(0, msg);

	if (r < 0)
		fsd_log(LOG_WARNING, "sd_notify %.*s: %s",
		        (int)strcspn(msg, "\n"), msg, strerror(-r));
}
#else
static void nt_send(const char *msg)
{
	(void)msg;
}
#endif

#define NT_MAX 1024

void fsd_notify(const char *state)
{
	char buf[NT_MAX];
	struct timespec ts;

	/* systemd matches the reload's end to the start it was told. */
	if (strstr(state, "RELOADING=1") && clock_gettime(CLOCK_MONOTONIC, &ts) == 0) {
		snprintf(buf, sizeof buf, "%s\nMONOTONIC_USEC=%llu", state,
		         (unsigned long long)ts.tv_sec * 1000000ULL +
		         (unsigned long long)ts.tv_nsec / 1000ULL);
		nt_send(buf);
		return;
	}
	nt_send(state);
}

void fsd_notify_status(const char *state, const char *fmt, ...)
{
	char buf[NT_MAX];
	va_list ap;
	int n;

	n = snprintf(buf, sizeof buf, "%s\nSTATUS=", state);
	if (n < 0 || (size_t)n >= sizeof buf) {
		fsd_notify(state);
		return;
	}
	va_start(ap, fmt);
	vsnprintf(buf + n, sizeof buf - (size_t)n, fmt, ap);
	va_end(ap);
	/* A newline in a path would start an assignment of its own. */
	for (char *p = buf + n; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	fsd_notify(buf);
}
