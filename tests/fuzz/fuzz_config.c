/*
 * fuzz_config.c - the option parsers of src/common/config_parse.c (sizes,
 * counts, booleans, log levels, context lists: the environment a traced
 * program reads, the command line) and the parser of saved sessions that
 * `ringtrace load` sends the daemon (src/daemon/load_parse.c). Input:
 * first byte selects the parser, the rest is the text.
 */
#include <stdlib.h>
#include <string.h>

#include "../../src/common/config_parse.h"
#include "../../src/common/context.h"
#include "../../src/daemon/load_parse.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	char *s = malloc(size);
	if (!s)
		return 0;
	memcpy(s, data + 1, size - 1);
	s[size - 1] = '\0';
	char err[RT_ERRLEN] = "";
	int ret = 0;
	switch (data[0] % 6) {
	case 0: {
		uint64_t v;
		ret = rt_parse_size(s, &v, err);
		break;
	}
	case 1: {
		uint32_t v;
		ret = rt_parse_u32(s, &v, err);
		break;
	}
	case 2: {
		bool v;
		ret = rt_parse_bool(s, &v, err);
		break;
	}
	case 3: {
		int32_t v;
		ret = rt_parse_loglevel(s, &v, err);
		if (ret == 0)
			FUZZ_CHECK(rt_loglevel_name(v) != NULL);
		break;
	}
	case 4: {
		uint8_t ctx[RT_CTX_COUNT];
		uint32_t nr = 0;
		ret = rt_parse_contexts(s, ctx, &nr, err);
		if (ret == 0)
			FUZZ_CHECK(nr <= RT_CTX_COUNT);
		break;
	}
	default: {
		struct load_line *lines = NULL;
		size_t n = 0;
		char lerr[512] = "";
		const char *override = (data[0] & 0x80) ? "renamed" : NULL;
		ret = load_parse(s, "fuzz.session", override, &lines, &n, lerr, sizeof(lerr));
		FUZZ_CHECK(ret == 0 || lerr[0]);
		if (ret == 0)
			load_lines_free(lines, n);
		err[0] = ret < 0 ? 'x' : '\0';
		break;
	}
	}
	/* A refusal says why. */
	FUZZ_CHECK(ret == 0 || err[0] != '\0');
	free(s);
	return 0;
}
