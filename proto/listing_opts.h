/*
 * proto/listing_opts.h: the format and the sort order of a directory
 * listing, one enum each for the configuration (default_format,
 * default_sort), the query (proto_listq_parse), the renderer
 * (proto/listing.h) and the daemon. Only the query leaves them at
 * DEFAULT (not given); a configured or effective value never is.
 */
#ifndef PROTO_LISTING_OPTS_H
#define PROTO_LISTING_OPTS_H

enum proto_list_format {
	PROTO_FMT_DEFAULT = 0,  /* not given: negotiate from Accept */
	PROTO_FMT_HTML,
	PROTO_FMT_JSON,
	PROTO_FMT_NDJSON,
};
enum proto_list_sort {
	PROTO_SORT_DEFAULT = 0, /* not given: name */
	PROTO_SORT_NAME,
	PROTO_SORT_SIZE,
	PROTO_SORT_MTIME,
	PROTO_SORT_NONE,        /* directory order, streamed */
};

#endif
