/*
 * fuzz_tsdl.c - the reader's TSDL parser and metadata compiler
 * (src/reader: rtr_meta_parse, what rtr_open runs on a trace's metadata
 * text). Input: the metadata text.
 */
#include <stdlib.h>
#include <string.h>

#include "../../src/reader/reader_internal.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rtr_meta m;
	char err[512];
	memset(&m, 0, sizeof(m));
	int ret = rtr_meta_parse("metadata", (const char *)data, size, &m, err, sizeof(err));
	/* A refusal says why. */
	FUZZ_CHECK(ret == 0 || err[0] != '\0');
	rtr_meta_free(&m);
	return 0;
}
