/* libFuzzer harness: the escaping of names in listings. Whatever the
 * bytes, the JSON string is valid JSON (valid UTF-8, no raw control
 * bytes), the HTML text has no markup characters, and the
 * percent-encoding uses only safe ASCII; an HTML row writes the name
 * as those two functions do. */
#include "first.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/listing.h"

static size_t utf8_ok(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];
	size_t len;
	unsigned long cp;

	if (c < 0x80)
		return 1;
	len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
	if (!len || n < len || c > 0xF4)
		return 0;
	cp = c & (0x7F >> len);
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3F);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
	    (cp >= 0xD800 && cp <= 0xDFFF))
		return 0;
	return len;
}

static void check_utf8(const struct proto_buf *b)
{
	const unsigned char *u = (const unsigned char *)b->data;

	for (size_t i = 0, k; i < b->len; i += k)
		if (!(k = utf8_ok(u + i, b->len - i)) || u[i] < 0x20)
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct proto_buf b = { 0 };
	bool inv;

	if (proto_json_string(&b, (const char *)data, size, &inv))
		abort();
	check_utf8(&b);
	if (b.len < 2 || b.data[0] != '"' || b.data[b.len - 1] != '"')
		abort();
	for (size_t i = 1; i + 1 < b.len; i++) {
		if (b.data[i] == '"')
			abort();
		if (b.data[i] == '\\') {
			char e = b.data[i + 1];

			if (!e || !strchr("\"\\nrtbfu", e) || i + 1 >= b.len - 1)
				abort();
			if (e == 'u') {
				if (i + 5 >= b.len - 1)
					abort();
				for (int k = 2; k < 6; k++)
					if (!strchr("0123456789abcdef", b.data[i + k]))
						abort();
				i += 4;
			}
			i++;
		}
	}
	b.len = 0;
	if (proto_html_escape(&b, (const char *)data, size))
		abort();
	check_utf8(&b);
	for (size_t i = 0; i < b.len; i++) {
		if (strchr("<>\"'", b.data[i]))
			abort();
		if (b.data[i] == '&' && strncmp(b.data + i, "&amp;", 5) &&
		    strncmp(b.data + i, "&lt;", 4) && strncmp(b.data + i, "&gt;", 4) &&
		    strncmp(b.data + i, "&quot;", 6) && strncmp(b.data + i, "&#39;", 5))
			abort();
	}
	char *enc = malloc(3 * size + 1);
	size_t n = proto_url_encode((const char *)data, size, enc, 3 * size + 1, 0);
	if (n > 3 * size)
		abort();
	for (size_t i = 0; i < n; i++)
		if (strchr("?#&+:/\"'<> \\", enc[i]) || (unsigned char)enc[i] < 0x21 ||
		    (unsigned char)enc[i] > 0x7e)
			abort();

	/* An HTML row writes the name as the two above do, whichever way it
	 * takes (a plain name is copied as it is). */
	struct proto_listing l = { .format = PROTO_FMT_HTML, .path = "/", .pathlen = 1 };
	struct proto_entry e = { .name = (const char *)data, .namelen = size,
	                         .type = PROTO_FT_REG };
	struct proto_buf row = { 0 }, want = { 0 };
	if (proto_listing_begin(&l, &row))
		abort();
	row.len = 0;
	if (proto_listing_entry(&l, &row, &e) ||
	    proto_buf_puts(&want, "<div class=r><a href=\"") ||
	    proto_buf_append(&want, enc, n) || proto_buf_puts(&want, "\">") ||
	    proto_buf_append(&want, b.data, b.len) || proto_buf_puts(&want, "</a>"))
		abort();
	if (!memmem(row.data, row.len, want.data, want.len))
		abort();
	proto_buf_free(&row);
	proto_buf_free(&want);
	free(enc);
	proto_buf_free(&b);
	return 0;
}
