/*
 * fuzz_packet.c - the trace reader's packet decoding (src/reader: the
 * packet index rtr_open builds, then rtr_next and the field decoders over
 * every event, every scope, nested values). Input: u32 L (little-endian),
 * L bytes of metadata text, then the bytes of the trace's one stream file;
 * both are written into a private directory and opened as a trace.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../src/reader/reader.h"
#include "fuzz.h"

static char dir[64];

static int put(const char *name, const uint8_t *p, size_t len)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	size_t off = 0;
	while (off < len) {
		ssize_t w = write(fd, p + off, len - off);
		if (w <= 0)
			break;
		off += (size_t)w;
	}
	close(fd);
	return off == len ? 0 : -1;
}

static void value(const struct rtr_value *v, int depth)
{
	uint32_t n = rtr_value_count(v);
	for (uint32_t i = 0; i < n && i < 64 && depth < 8; i++) {
		struct rtr_value child;
		const char *name;
		if (rtr_value_child(v, i, &child, &name) == 0)
			value(&child, depth + 1);
	}
	if (v->type == RTR_STRING)
		FUZZ_CHECK(strlen(v->s.p) == v->s.len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!dir[0]) {
		snprintf(dir, sizeof(dir), "/tmp/rt-fuzz-packet-XXXXXX");
		if (!mkdtemp(dir))
			abort();
	}
	if (size < 4)
		return 0;
	uint32_t mlen = (uint32_t)data[0] | (uint32_t)data[1] << 8 | (uint32_t)data[2] << 16 |
			(uint32_t)data[3] << 24;
	if (mlen > size - 4)
		return 0;
	if (put("metadata", data + 4, mlen) < 0 ||
	    put("stream_0", data + 4 + mlen, size - 4 - mlen) < 0)
		return 0;
	struct rtr_trace *t = NULL;
	char err[512];
	if (rtr_open(dir, &t, err, sizeof(err)) < 0)
		return 0;
	struct rtr_event ev;
	for (int i = 0; i < 4096 && rtr_next(t, &ev) == 1; i++) {
		for (int s = RTR_SCOPE_PACKET_HEADER; s <= RTR_SCOPE_PAYLOAD; s++) {
			uint32_t n = rtr_scope_count(&ev, (enum rtr_scope)s);
			for (uint32_t k = 0; k < n && k < 256; k++) {
				struct rtr_value v;
				const char *name;
				if (rtr_scope_field(&ev, (enum rtr_scope)s, k, &v, &name) == 0)
					value(&v, 0);
			}
		}
		struct rtr_value vs[8];
		(void)rtr_fields(&ev, 0, vs, 8);
	}
	rtr_close(t);
	return 0;
}
