/*
 * Service manager notifications (sd_notify(3)) for a Type=notify unit:
 * READY=1 once the workers run, RELOADING=1 and READY=1 around a reload,
 * STOPPING=1 when a stop begins. Nothing is sent when NOTIFY_SOCKET is
 * unset (not started by systemd) or when built without libsystemd.
 */
#ifndef FSD_NOTIFY_H
#define FSD_NOTIFY_H

/** Sends @state, newline-separated VAR=value assignments, as is. A
 *  RELOADING=1 gets the MONOTONIC_USEC= that Type=notify-reload units
 *  require added. A failure is logged; the caller goes on. Main thread. */
void fsd_notify(const char *state);

/** Sends @state followed by STATUS= with the formatted text, in which
 *  control characters are replaced so that it stays one assignment. */
void fsd_notify_status(const char *state, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
