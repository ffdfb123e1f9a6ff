#include "first.h"

#include "proto/mime.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "t/tmain.h"

static struct proto_mime *m;

static const char *L(const char *name)
{
	return proto_mime_lookup(m, name, strlen(name));
}

START_TEST(builtin)
{
	ck_assert_int_eq(proto_mime_new(&m, NULL), 0);
	ck_assert_str_eq(L("index.html"), "text/html; charset=utf-8");
	ck_assert_str_eq(L("INDEX.HTM"), "text/html; charset=utf-8");
	ck_assert_str_eq(L("a.css"), "text/css; charset=utf-8");
	ck_assert_str_eq(L("app.js"), "text/javascript; charset=utf-8");
	ck_assert_str_eq(L("d.json"), "application/json");      /* RFC 8259 */
	ck_assert_str_eq(L("r.txt"), "text/plain; charset=utf-8");
	ck_assert_str_eq(L("p.PNG"), "image/png");
	ck_assert_str_eq(L("p.jpg"), "image/jpeg");
	ck_assert_str_eq(L("p.Jpeg"), "image/jpeg");
	ck_assert_str_eq(L("g.gif"), "image/gif");
	ck_assert_str_eq(L("i.svg"), "image/svg+xml; charset=utf-8");
	ck_assert_str_eq(L("w.webp"), "image/webp");
	ck_assert_str_eq(L("f.ico"), "image/vnd.microsoft.icon");
	ck_assert_str_eq(L("d.pdf"), "application/pdf");
	ck_assert_str_eq(L("m.wasm"), "application/wasm");
	ck_assert_str_eq(L("v.mp4"), "video/mp4");
	ck_assert_str_eq(L("v.webm"), "video/webm");
	ck_assert_str_eq(L("x.xml"), "application/xml; charset=utf-8");
	ck_assert_str_eq(L("z.zip"), "application/zip");
	ck_assert_str_eq(L("a.tar.gz"), "application/gzip");
	ck_assert_str_eq(L("a.tar"), "application/x-tar");
	ck_assert_str_eq(L("f.woff2"), "font/woff2");
	/* no extension, dotfiles, dots in directories, odd names */
	ck_assert_str_eq(L("README"), "application/octet-stream");
	ck_assert_str_eq(L(".html"), "application/octet-stream");
	ck_assert_str_eq(L("dir.html/README"), "application/octet-stream");
	ck_assert_str_eq(L("/srv/www/a.b/c.css"), "text/css; charset=utf-8");
	ck_assert_str_eq(L("trailing."), "application/octet-stream");
	ck_assert_str_eq(L("x.unknownext"), "application/octet-stream");
	ck_assert_str_eq(L(""), "application/octet-stream");
	ck_assert_str_eq(L("a.averyveryveryveryveryverylongextension"),
	                 "application/octet-stream");
	/* len bounds the name */
	ck_assert_str_eq(proto_mime_lookup(m, "a.css.gz", 5), "text/css; charset=utf-8");
	ck_assert_ptr_null(proto_mime_by_ext(m, "nope", 4));
	ck_assert_str_eq(proto_mime_by_ext(m, "HTML", 4), "text/html; charset=utf-8");
	proto_mime_free(m);
}
END_TEST

START_TEST(load_text)
{
	static const char text[] =
		"# comment line\n"
		"\n"
		"text/x-custom\tcus cus2 # trailing comment ext\n"
		"application/x-over   js\n"      /* replaces a built-in */
		"application/x-second js\n"      /* first in the file wins */
		"text/plain; charset=latin1 ignoreme\n"    /* malformed: skipped */
		"image/x-noext\n"
		"notatype foo\n"
		"   text/x-indented  ind\r\n"
		"application/json\tjson\n"
		"audio/x-last   LAST";           /* no final newline */
	int r;

	ck_assert_int_eq(proto_mime_new(&m, "text/x-default"), 0);
	r = proto_mime_load(m, text, sizeof text - 1);
	ck_assert_int_eq(r, 6);   /* cus cus2 js ind json LAST */
	ck_assert_str_eq(L("a.cus"), "text/x-custom; charset=utf-8");
	ck_assert_str_eq(L("a.CUS2"), "text/x-custom; charset=utf-8");
	ck_assert_str_eq(L("a.js"), "application/x-over");
	ck_assert_str_eq(L("a.ind"), "text/x-indented; charset=utf-8");
	ck_assert_str_eq(L("a.last"), "audio/x-last");
	ck_assert_str_eq(L("a.json"), "application/json");
	ck_assert_str_eq(L("a.foo"), "text/x-default");
	ck_assert_str_eq(L("a.ignoreme"), "text/x-default");
	ck_assert_str_eq(L("a.ext"), "text/x-default");
	ck_assert_str_eq(L("a.html"), "text/html; charset=utf-8");  /* kept */
	/* strings stay valid after more loads (the table may grow) */
	const char *keep = L("a.cus");
	char big[64 * 1024];
	size_t o = 0;
	for (int i = 0; i < 3000 && o < sizeof big - 64; i++)
		o += (size_t)snprintf(big + o, sizeof big - o, "x/t%d e%d\n", i, i);
	ck_assert_int_gt(proto_mime_load(m, big, o), 2000);
	ck_assert_str_eq(keep, "text/x-custom; charset=utf-8");
	ck_assert_str_eq(L("q.e1999"), "x/t1999");
	ck_assert_str_eq(L("q.cus"), "text/x-custom; charset=utf-8");
	proto_mime_free(m);
}
END_TEST

START_TEST(system_file)
{
	/* Debian's /etc/mime.types, when the machine has it (the daemon
	 * reads it; proto only parses). */
	FILE *f = fopen("/etc/mime.types", "r");
	char *text;
	size_t n;

	if (!f)
		return;
	text = malloc(1 << 20);
	n = fread(text, 1, 1 << 20, f);
	fclose(f);
	ck_assert_int_eq(proto_mime_new(&m, NULL), 0);
	ck_assert_int_gt(proto_mime_load(m, text, n), 500);
	ck_assert_str_eq(L("a.css"), "text/css; charset=utf-8");
	ck_assert_str_eq(L("a.png"), "image/png");
	ck_assert_str_eq(L("a.json"), "application/json");
	ck_assert_str_eq(L("a.html"), "text/html; charset=utf-8");
	proto_mime_free(m);
	free(text);
}
END_TEST

TMAIN_TESTS("mime", builtin, load_text, system_file);
