/*
 * lk_fold_utf8: ASCII and UTF-8 simple case folding for case-insensitive
 * lookups, without a Unicode library of our own: each code point goes to
 * the lowercase of its uppercase in glibc's C.UTF-8 tables (the simple,
 * one-to-one mappings of UnicodeData.txt, locale-independent). That puts
 * together what CaseFolding.txt's C and S mappings put together (k, K
 * and the Kelvin sign; s, S and long s; the three sigmas; micro sign and
 * mu) except for the Turkic i, which those mappings keep apart and so do
 * we: U+0130 and U+0131 stay as they are. No normalization: a
 * precomposed and a decomposed "e acute" differ, as they do on disk.
 * Bytes that are not valid UTF-8 stay as they are. Without the C.UTF-8
 * locale (not installed) only ASCII is folded.
 */
#include "first.h"

#include <locale.h>
#include <string.h>
#include <pthread.h>
#include <stdint.h>
#include <wctype.h>

#include "fibril/lookup_int.h"

static locale_t lk__utf8_loc;
static pthread_once_t lk__utf8_once = PTHREAD_ONCE_INIT;

static void lk__utf8_init(void)
{
	lk__utf8_loc = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
}

/* Decodes one UTF-8 sequence at @s (@n bytes left): its length, or 0 if
 * it is not well-formed (overlong, surrogate, beyond U+10FFFF). */
static size_t lk__utf8_dec(const unsigned char *s, size_t n, uint32_t *cp)
{
	uint32_t c = s[0];
	size_t len;
	uint32_t min;

	if (c < 0xc2 || c > 0xf4)
		return 0;
	if (c < 0xe0) {
		len = 2, min = 0x80, c &= 0x1f;
	} else if (c < 0xf0) {
		len = 3, min = 0x800, c &= 0x0f;
	} else {
		len = 4, min = 0x10000, c &= 0x07;
	}
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = (c << 6) | (s[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return len;
}

static size_t lk__utf8_enc(uint32_t c, unsigned char *o)
{
	if (c < 0x80) {
		o[0] = (unsigned char)c;
		return 1;
	}
	if (c < 0x800) {
		o[0] = (unsigned char)(0xc0 | (c >> 6));
		o[1] = (unsigned char)(0x80 | (c & 0x3f));
		return 2;
	}
	if (c < 0x10000) {
		o[0] = (unsigned char)(0xe0 | (c >> 12));
		o[1] = (unsigned char)(0x80 | ((c >> 6) & 0x3f));
		o[2] = (unsigned char)(0x80 | (c & 0x3f));
		return 3;
	}
	o[0] = (unsigned char)(0xf0 | (c >> 18));
	o[1] = (unsigned char)(0x80 | ((c >> 12) & 0x3f));
	o[2] = (unsigned char)(0x80 | ((c >> 6) & 0x3f));
	o[3] = (unsigned char)(0x80 | (c & 0x3f));
	return 4;
}

static uint32_t lk__fold_cp(uint32_t c)
{
	if (c == 0x130 || c == 0x131 || !lk__utf8_loc)
		return c;
	wint_t u = towupper_l((wint_t)c, lk__utf8_loc);
	wint_t l = towlower_l(u, lk__utf8_loc);
	/* A mapping that leaves the valid range (none does) would make
	 * names collide with bytes we keep as they are. */
	if (l > 0x10ffff || (l >= 0xd800 && l <= 0xdfff))
		return c;
	return (uint32_t)l;
}

FIBRIL_API size_t lk_fold_utf8(const char *name, size_t len, char *out,
			       size_t outsz, void *arg)
{
	const unsigned char *s = (const unsigned char *)name;
	unsigned char tmp[4];
	size_t o = 0;

	(void)arg;
	pthread_once(&lk__utf8_once, lk__utf8_init);
	for (size_t i = 0; i < len;) {
		size_t k;
		if (s[i] < 0x80) {
			tmp[0] = s[i] >= 'A' && s[i] <= 'Z' ? s[i] + 32 : s[i];
			k = 1;
			i++;
		} else {
			uint32_t cp;
			size_t dl = lk__utf8_dec(s + i, len - i, &cp);
			if (dl == 0) {
				tmp[0] = s[i];  /* not UTF-8: the byte itself */
				k = 1;
				i++;
			} else {
				k = lk__utf8_enc(lk__fold_cp(cp), tmp);
				i += dl;
			}
		}
		if (o + k <= outsz)
			memcpy(out + o, tmp, k);
		o += k;
	}
	return o;
}
