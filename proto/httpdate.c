#include "first.h"

#include "proto/httpdate.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

static const char wday_s[7][4] = { "Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat" };
static const char *const wday_l[7] = { "Sunday", "Monday", "Tuesday",
	"Wednesday", "Thursday", "Friday", "Saturday" };
static const char month_s[12][4] = { "Jan", "Feb", "Mar", "Apr", "May", "Jun",
	"Jul", "Aug", "Sep", "Oct", "Nov", "Dec" };

/* Days since 1970-01-01 of a proleptic Gregorian date, and back (the
 * era-based algorithms of H. Hinnant, "chrono-compatible low-level date
 * algorithms"); exact for any int64 range we use, TZ-free. */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
	int64_t era;
	unsigned yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = (unsigned)(y - era * 400);
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
	int64_t era;
	unsigned doe, yoe, doy, mp;

	z += 719468;
	era = (z >= 0 ? z : z - 146096) / 146097;
	doe = (unsigned)(z - era * 146097);
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	*d = doy - (153 * mp + 2) / 5 + 1;
	*m = mp < 10 ? mp + 3 : mp - 9;
	*y = (int64_t)yoe + era * 400 + (*m <= 2);
}

static void put2(char *p, unsigned v)
{
	p[0] = (char)('0' + v / 10 % 10);
	p[1] = (char)('0' + v % 10);
}

int proto_httpdate_format(time_t t, char out[PROTO_HTTPDATE_LEN])
{
	int64_t days = (int64_t)t / 86400, secs = (int64_t)t % 86400, y;
	unsigned m, d, wd;

	if (secs < 0) {
		secs += 86400;
		days--;
	}
	civil_from_days(days, &y, &m, &d);
	if (y < 0 || y > 9999) {
		out[0] = 0;
		return -EOVERFLOW;
	}
	wd = (unsigned)((days % 7 + 7 + 4) % 7);        /* 1970-01-01: Thu */
	memcpy(out, wday_s[wd], 3);
	memcpy(out + 3, ", ", 2);
	put2(out + 5, d);
	out[7] = ' ';
	memcpy(out + 8, month_s[m - 1], 3);
	out[11] = ' ';
	put2(out + 12, (unsigned)(y / 100));
	put2(out + 14, (unsigned)(y % 100));
	out[16] = ' ';
	put2(out + 17, (unsigned)(secs / 3600));
	out[19] = ':';
	put2(out + 20, (unsigned)(secs / 60 % 60));
	out[22] = ':';
	put2(out + 23, (unsigned)(secs % 60));
	memcpy(out + 25, " GMT", 5);
	return 29;
}

struct cur {
	const char *p, *end;
};

static bool lit(struct cur *c, const char *s)
{
	size_t n = strlen(s);

	if ((size_t)(c->end - c->p) < n || memcmp(c->p, s, n))
		return false;
	c->p += n;
	return true;
}

static bool digits(struct cur *c, int n, unsigned *v)
{
	*v = 0;
	if (c->end - c->p < n)
		return false;
	for (int i = 0; i < n; i++) {
		if (c->p[i] < '0' || c->p[i] > '9')
			return false;
		*v = *v * 10 + (unsigned)(c->p[i] - '0');
	}
	c->p += n;
	return true;
}

static bool month(struct cur *c, unsigned *m)
{
	for (unsigned i = 0; i < 12; i++)
		if (lit(c, month_s[i])) {
			*m = i + 1;
			return true;
		}
	return false;
}

static bool wday_short(struct cur *c)
{
	for (int i = 0; i < 7; i++)
		if (lit(c, wday_s[i]))
			return true;
	return false;
}

static bool wday_long(struct cur *c)
{
	for (int i = 0; i < 7; i++)
		if (lit(c, wday_l[i]))
			return true;
	return false;
}

/* time-of-day = hour ":" minute ":" second */
static bool tod(struct cur *c, unsigned *h, unsigned *mi, unsigned *s)
{
	return digits(c, 2, h) && lit(c, ":") && digits(c, 2, mi) &&
	       lit(c, ":") && digits(c, 2, s);
}

static bool leap(int64_t y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int finish(int64_t y, unsigned m, unsigned d, unsigned h, unsigned mi,
                  unsigned s, time_t *out)
{
	static const unsigned char mdays[12] = { 31, 28, 31, 30, 31, 30, 31,
		31, 30, 31, 30, 31 };
	unsigned dim;

	if (m < 1 || m > 12 || h > 23 || mi > 59 || s > 60)
		return -EINVAL;
	dim = mdays[m - 1] + (m == 2 && leap(y));
	if (d < 1 || d > dim)
		return -EINVAL;
	if (s == 60)            /* leap second: the last second we can name */
		s = 59;
	*out = (time_t)(days_from_civil(y, m, d) * 86400 + h * 3600 + mi * 60 + s);
	return 0;
}

int proto_httpdate_parse(const char *s, size_t len, time_t now, time_t *out)
{
	struct cur c = { s, s + len };
	unsigned d, m, y, h, mi, sec;
	const char *start;

	while (c.p < c.end && (*c.p == ' ' || *c.p == '\t'))
		c.p++;
	while (c.end > c.p && (c.end[-1] == ' ' || c.end[-1] == '\t'))
		c.end--;
	start = c.p;

	/* IMF-fixdate */
	if (wday_short(&c) && lit(&c, ", ")) {
		if (digits(&c, 2, &d) && lit(&c, " ") && month(&c, &m) &&
		    lit(&c, " ") && digits(&c, 4, &y) && lit(&c, " ") &&
		    tod(&c, &h, &mi, &sec) && lit(&c, " GMT") && c.p == c.end)
			return finish(y, m, d, h, mi, sec, out);
		return -EINVAL;
	}

	/* asctime: "Sun Nov  6 08:49:37 1994" */
	c.p = start;
	if (wday_short(&c) && lit(&c, " ")) {
		if (!month(&c, &m) || !lit(&c, " "))
			return -EINVAL;
		if (lit(&c, " ")) {
			if (!digits(&c, 1, &d))
				return -EINVAL;
		} else if (!digits(&c, 2, &d)) {
			return -EINVAL;
		}
		if (lit(&c, " ") && tod(&c, &h, &mi, &sec) && lit(&c, " ") &&
		    digits(&c, 4, &y) && c.p == c.end)
			return finish(y, m, d, h, mi, sec, out);
		return -EINVAL;
	}

	/* RFC 850: "Sunday, 06-Nov-94 08:49:37 GMT" */
	c.p = start;
	if (wday_long(&c) && lit(&c, ", ") && digits(&c, 2, &d) &&
	    lit(&c, "-") && month(&c, &m) && lit(&c, "-") &&
	    digits(&c, 2, &y) && lit(&c, " ") && tod(&c, &h, &mi, &sec) &&
	    lit(&c, " GMT") && c.p == c.end) {
		/* RFC 9110 5.6.7: more than 50 years in the future means the
		 * most recent past year with those two digits. */
		int64_t ny, yy;
		unsigned nm, nd;
		int64_t nd_days = (int64_t)now / 86400 - ((int64_t)now % 86400 < 0);

		civil_from_days(nd_days, &ny, &nm, &nd);
		yy = ny - ny % 100 + y;
		if (yy > ny + 50)
			yy -= 100;
		else if (yy <= ny - 50)
			yy += 100;
		return finish(yy, m, d, h, mi, sec, out);
	}
	return -EINVAL;
}
