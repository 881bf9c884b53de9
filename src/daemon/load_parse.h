/*
 * load_parse.h - the parser of saved sessions (load_parse.c).
 *
 * Concurrency: works on its arguments only.
 */
#ifndef RINGTRACE_LOAD_PARSE_H
#define RINGTRACE_LOAD_PARSE_H

#include <stddef.h>

#include "../proto/proto.h"

/* One parsed line: its request. */
struct load_line {
	unsigned lineno;
	struct rtp_kv kv;
};

/* Parse and check every line of `text` (modified in place; `file` names
 * it in messages); with `override`, the text's single session is renamed
 * so. Returns 0 and the requests in *out (*nout of them, at least one;
 * free them with load_lines_free), or -EINVAL (a message "FILE:LINE:
 * what" in err) or -ENOMEM. */
int load_parse(char *text, const char *file, const char *override,
	       struct load_line **out, size_t *nout, char *err, size_t errlen);
void load_lines_free(struct load_line *l, size_t n);

#endif
