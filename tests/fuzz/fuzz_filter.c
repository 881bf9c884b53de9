/*
 * fuzz_filter.c - the filter language (src/filter): the compiler of
 * LTTng's filter expressions (rtf_compile, as view --filter, the
 * daemon's rules and triggers run it on the command line's text) and the
 * loader of compiled programs (rtf_load, as a traced program runs it on
 * the bytes a daemon sends). Input: first byte 0..127, the rest is an
 * expression: compile it, evaluate it against an event whose every field
 * is the integer 1, and check that what rtf_save writes rtf_load takes
 * back. First byte 128..255: the rest is a saved program for rtf_load,
 * then evaluated the same way.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/filter/filter.h"
#include "fuzz.h"

static int fetch_one(void *arg, uint32_t ref, struct rtf_value *v)
{
	(void)arg;
	(void)ref;
	memset(v, 0, sizeof(*v));
	v->type = RTF_INT;
	v->i = 1;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	char err[256] = "";
	struct rtf_program *p = NULL;
	if (data[0] < 128) {
		char *expr = malloc(size);
		if (!expr)
			return 0;
		memcpy(expr, data + 1, size - 1);
		expr[size - 1] = '\0';
		static const char *const vars[] = { "x", "count", NULL };
		struct rtf_options opt = { .flags = data[0] & 1 ? RTF_LOCAL_ERRORS : 0,
					   .vars = data[0] & 2 ? vars : NULL };
		int ret = rtf_compile(expr, &opt, &p, err, sizeof(err));
		free(expr);
		FUZZ_CHECK(ret == 0 || ret == -ENOMEM || (ret == -EINVAL && err[0]));
		if (ret < 0)
			return 0;
		void *buf = NULL;
		size_t len = 0;
		if (rtf_save(p, &buf, &len) == 0) {
			struct rtf_program *q = NULL;
			int lret = rtf_load(buf, len, &q, err, sizeof(err));
			/* What we save, we load back. */
			FUZZ_CHECK(lret == 0 || lret == -ENOMEM);
			if (q) {
				FUZZ_CHECK(rtf_eval(q, fetch_one, NULL) == rtf_eval(p, fetch_one, NULL));
				rtf_free(q);
			}
			free(buf);
		}
	} else {
		int ret = rtf_load(data + 1, size - 1, &p, err, sizeof(err));
		FUZZ_CHECK(ret == 0 || ret == -ENOMEM || (ret == -EPROTO && err[0]));
		if (ret < 0)
			return 0;
	}
	(void)rtf_eval(p, fetch_one, NULL);
	rtf_free(p);
	return 0;
}
