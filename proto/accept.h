/*
 * proto/accept.h: Accept-Encoding (RFC 9110 12.5.3) and Accept (12.5.1)
 * weights. Pure, any thread, locale-independent.
 */
#ifndef PROTO_ACCEPT_H
#define PROTO_ACCEPT_H

#include <stdbool.h>

/**
 * The weight Accept-Encoding value @ae gives content coding @coding, in
 * thousandths (q=0.5 -> 500; no q -> 1000): from the element naming the
 * coding (case-insensitive; "gzip" and "x-gzip", "compress" and
 * "x-compress" are the same, RFC 9110 8.4.1), else from "*", else -1
 * (not mentioned). @ae NULL -> -1. Elements with a malformed q count
 * as q=0 (RFC 9110 12.4.2 allows at most 3 decimals, value <= 1).
 */
int proto_accept_encoding_q(const char *ae, const char *coding);

/** Whether @ae lets the server send @coding: its weight > 0 (a coding
 *  that is not mentioned is not acceptable, as with no "*"; RFC 9110
 *  12.5.3). @ae NULL -> false (no header: send the plain file, the
 *  safe reading of "any coding is acceptable"). */
bool proto_accepts_encoding(const char *ae, const char *coding);

/**
 * The weight an Accept value @accept gives media type @type/@sub, in
 * thousandths, from the most specific matching media-range
 * ("type/sub" > "type/" "*" > "*" "/" "*"; parameters other than q are
 * ignored). -1 if no range matches.
 */
int proto_accept_q(const char *accept, const char *type, const char *sub);

#endif
