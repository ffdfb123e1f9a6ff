/*
 * proto/mime.h: file name -> Content-Type.
 *
 * A table built from a built-in list (the common web types) overlaid by
 * the text of a mime.types file (Debian's /etc/mime.types format: a type
 * followed by extensions, '#' comments). Reading the file is the
 * caller's job; this module does no I/O.
 *
 * Lifetime and threads: build the table once (new + load) on one
 * thread; afterwards lookups are read-only and may run on any number of
 * threads at once. Returned strings belong to the table and live until
 * proto_mime_free().
 */
#ifndef PROTO_MIME_H
#define PROTO_MIME_H

#include <stddef.h>

struct proto_mime;

/**
 * Creates a table holding the built-in types (html, css, js, mjs, json,
 * txt, md, csv, xml, svg, png, jpg/jpeg, gif, webp, avif, ico, bmp,
 * pdf, wasm, mp4, webm, ogg, mp3, wav, zip, gz, tgz, tar, xz, zst, br,
 * woff, woff2, ttf, otf, ...). @default_type (copied) is what lookups
 * return for unknown extensions; NULL means "application/octet-stream".
 * Returns 0 or -ENOMEM.
 */
int proto_mime_new(struct proto_mime **out, const char *default_type);

/**
 * Adds the mappings of a mime.types text (@len bytes, need not be
 * NUL-terminated). A mapping from the text replaces the built-in one
 * for the same extension; within the text the first mapping of an
 * extension wins (as in Debian's file, which lists each once).
 * Malformed lines are skipped. Returns the number of extensions added
 * or replaced, or -ENOMEM (the table stays usable).
 */
int proto_mime_load(struct proto_mime *m, const char *text, size_t len);

/**
 * The Content-Type for file name @name (@len bytes; a name or a path:
 * only the last segment counts). The extension is what follows the last
 * '.', matched case-insensitively; a name whose only '.' is its first
 * byte (".profile") has none. Textual types (text/ types, JavaScript,
 * XML and +xml such as SVG) come with "; charset=utf-8" unless the entry
 * already carries parameters; JSON does not (RFC 8259 defines no
 * charset: it is always UTF-8). Multi-dot extensions of mime.types
 * ("cwl.json") are never matched: only the last one counts.
 * Never NULL: unknown -> the default type.
 */
const char *proto_mime_lookup(const struct proto_mime *m, const char *name,
                              size_t len);

/** The type for an extension alone ("html", no dot), or NULL if unknown. */
const char *proto_mime_by_ext(const struct proto_mime *m, const char *ext,
                              size_t len);

/** Frees the table (NULL is fine). No lookup may be running. */
void proto_mime_free(struct proto_mime *m);

#endif
