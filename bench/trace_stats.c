/*
 * trace_stats.c - what a ringtrace trace directory holds, from its packet
 * headers alone (src/ctf/ctf_packet.h gives the layout): stream files,
 * packets, bytes, events discarded (the last packet of each stream carries
 * the stream's cumulative count) and packets overwritten (gaps in
 * packet_seq_num). Used by run.sh to count losses without decoding every
 * event.
 *
 *   trace_stats DIR   prints: streams=N packets=N bytes=N discarded=N
 *                             seq_gaps=N content_bytes=N
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/ctf/ctf_packet.h"

struct totals {
	uint64_t streams, packets, bytes, discarded, seq_gaps, content;
};

static int scan_stream(const char *path, struct totals *t)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		perror(path);
		return -1;
	}
	struct ctf_packet_header h;
	uint64_t off = 0, last_discarded = 0, next_seq = 0;
	int first = 1, ret = 0;
	while (fread(&h, sizeof(h), 1, f) == 1) {
		if (h.magic != CTF_MAGIC || h.packet_size < 8 * sizeof(h) ||
		    h.packet_size % 8 || h.content_size > h.packet_size) {
			fprintf(stderr, "%s: bad packet at offset %" PRIu64 "\n", path, off);
			ret = -1;
			break;
		}
		if (!first && h.packet_seq_num != next_seq)
			t->seq_gaps += h.packet_seq_num - next_seq;
		first = 0;
		next_seq = h.packet_seq_num + 1;
		last_discarded = h.events_discarded;
		t->packets++;
		t->content += h.content_size / 8;
		off += h.packet_size / 8;
		if (fseeko(f, (off_t)off, SEEK_SET) != 0)
			break;
	}
	t->discarded += last_discarded;
	t->bytes += off;
	t->streams++;
	fclose(f);
	return ret;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s TRACE_DIR\n", argv[0]);
		return 2;
	}
	DIR *d = opendir(argv[1]);
	if (!d) {
		perror(argv[1]);
		return 1;
	}
	struct totals t = { 0 };
	struct dirent *e;
	int ret = 0;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.' || !strcmp(e->d_name, "metadata") ||
		    !strchr(e->d_name, '_'))
			continue;
		char path[4096];
		snprintf(path, sizeof(path), "%s/%s", argv[1], e->d_name);
		if (scan_stream(path, &t) < 0)
			ret = 1;
	}
	closedir(d);
	printf("streams=%" PRIu64 " packets=%" PRIu64 " bytes=%" PRIu64
	       " discarded=%" PRIu64 " seq_gaps=%" PRIu64 " content_bytes=%" PRIu64 "\n",
	       t.streams, t.packets, t.bytes, t.discarded, t.seq_gaps, t.content);
	return ret;
}
