/*
 * test_ctf_walk.c - ctf_stream_cut_torn: a stream file left in the middle
 * of a packet is cut back to its last whole packet, a whole one is left
 * as it is, and a file whose first header is damaged or short is emptied.
 * ctf_clock_shift: a clock's offset moved by a relay's correction, in
 * seconds and cycles, both signs, with carries.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctf/ctf_metadata.h"
#include "ctf/ctf_walk.h"
#include "unit.h"

#define PKT 200u	/* bytes per packet: header and 116 bytes of events */

static int stream_with(unsigned whole, unsigned extra, uint32_t magic)
{
	char path[] = "/tmp/test_ctf_walk.XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0)
		return -1;
	unlink(path);
	char pkt[PKT];
	memset(pkt, 0xab, sizeof(pkt));
	struct ctf_packet_header h = { .magic = magic, .packet_size = 8u * PKT,
				       .content_size = 8u * PKT };
	memcpy(pkt, &h, sizeof(h));
	for (unsigned i = 0; i < whole; i++)
		if (write(fd, pkt, PKT) != PKT)
			return -1;
	if (extra && write(fd, pkt, extra) != (ssize_t)extra)
		return -1;
	return fd;
}

static uint64_t file_size(int fd)
{
	struct stat st;
	return fstat(fd, &st) < 0 ? UINT64_MAX : (uint64_t)st.st_size;
}

static void check(const char *what, unsigned whole, unsigned extra, uint32_t magic,
		  uint64_t want_size)
{
	unit_case = what;
	int fd = stream_with(whole, extra, magic);
	CHECK(fd >= 0, "cannot make the stream file");
	if (fd < 0)
		return;
	uint64_t before = file_size(fd), cut = 1234;
	CHECK(ctf_stream_cut_torn(fd, &cut) == 0, "cut failed");
	CHECK_EQ(file_size(fd), want_size);
	CHECK_EQ(cut, before - want_size);
	/* Once cut, the file ends on a whole packet: nothing more to cut. */
	CHECK(ctf_stream_cut_torn(fd, &cut) == 0, "second cut failed");
	CHECK_EQ(cut, 0);
	CHECK_EQ(file_size(fd), want_size);
	close(fd);
}

/* The clock's offset in ns (exact for these frequencies). */
static int64_t offset_ns(const struct ctf_clock_info *c)
{
	return c->offset_s * 1000000000ll + (int64_t)(c->offset * 1000000000ull / c->freq);
}

static void shift(const char *what, uint64_t freq, int64_t s, uint64_t cycles, int64_t by)
{
	unit_case = what;
	struct ctf_clock_info c = { .freq = freq, .offset_s = s, .offset = cycles };
	int64_t before = offset_ns(&c);
	ctf_clock_shift(&c, by);
	CHECK_EQ(offset_ns(&c), before + by);
	CHECK(c.offset < freq, "offset %llu not below freq", (unsigned long long)c.offset);
}

int main(void)
{
	shift("ns clock, forward", 1000000000ull, 100, 999999000, 2500);
	shift("ns clock, back across a second", 1000000000ull, 100, 1000, -2500);
	shift("ns clock, back by seconds", 1000000000ull, 100, 0, -3000000001ll);
	shift("4 GHz clock, forward", 4000000000ull, 7, 3999999996ull, 1);
	shift("4 GHz clock, back", 4000000000ull, 7, 0, -1);
	shift("offset past freq", 1000000000ull, 5, 2500000000ull, 0);
	check("whole packets", 3, 0, CTF_MAGIC, 3 * PKT);
	check("torn in the events", 3, PKT - 10, CTF_MAGIC, 3 * PKT);
	check("torn in the header", 3, CTF_PACKET_HEADER_SIZE - 1, CTF_MAGIC, 3 * PKT);
	check("only a torn packet", 0, PKT / 2, CTF_MAGIC, 0);
	check("empty", 0, 0, CTF_MAGIC, 0);
	check("damaged magic", 2, 0, 0x12345678u, 0);
	return unit_finish();
}
