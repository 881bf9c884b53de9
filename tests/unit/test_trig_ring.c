/*
 * test_trig_ring.c - the notification ring (src/proto/trig_ring.h): the
 * documented layout written by hand, round trips of every capture type,
 * a full ring losing (counted) and never waiting, slots of every kind of
 * damage refused by the reader, random slots read in bounds, a writer
 * that died between its ticket and its commit given up, a scribbled
 * header costing writers nothing but lost notifications, attach refusals,
 * and four writer threads against one reader: every notification read or
 * counted lost, each thread's in order.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../../src/proto/trig_ring.h"
#include "unit.h"

static uint64_t *hdr_word(const struct rttr_ring *r, size_t off)
{
	return (uint64_t *)(void *)(r->base + off);
}

static char *slot(const struct rttr_ring *r, uint64_t ticket)
{
	return r->base + RTTR_HEADER_SIZE + (ticket % r->nr_slots) * r->slot_size;
}

static void make(struct rttr_ring *w, struct rttr_ring *rd_ring, uint32_t n, uint32_t size)
{
	int fd;
	CHECK(rttr_create(rd_ring, n, size, &fd) == 0, "create %u x %u", n, size);
	CHECK(rttr_attach(w, fd) == 0, "attach");
	CHECK(w->nr_slots == n && w->slot_size == size, "geometry seen by the writer");
	close(fd);
}

static void test_round_trip(void)
{
	unit_case = "round trip";
	struct rttr_ring w, r;
	make(&w, &r, 8, 128);
	struct rttr_reader *rd = calloc(1, sizeof(*rd));
	struct rttr_record rec = { .token = 77, .time_ns = 123456789, .pid = 10, .tid = 11,
				   .nr_captures = 6 };
	rec.captures[0] = (struct rttr_value){ .type = RTTR_S64, .i = -5 };
	rec.captures[1] = (struct rttr_value){ .type = RTTR_U64, .u = UINT64_MAX };
	rec.captures[2] = (struct rttr_value){ .type = RTTR_DOUBLE, .d = 2.5 };
	rec.captures[3] = (struct rttr_value){ .type = RTTR_STRING, .s = { "hello", 5 } };
	rec.captures[4] = (struct rttr_value){ .type = RTTR_NONE };
	rec.captures[5] = (struct rttr_value){ .type = RTTR_BYTES, .s = { "\0\1\377", 3 } };
	CHECK(rttr_write(&w, &rec), "write");
	/* The documented layout: slot 0 at 256; commit 1, token, time, pid,
	 * tid, len, nr, then records type/0/len16/value. */
	const char *s = r.base + RTTR_HEADER_SIZE;
	uint64_t v64;
	uint32_t v32;
	memcpy(&v64, s, 8);
	CHECK_EQ(v64, 1);
	memcpy(&v64, s + 8, 8);
	CHECK_EQ(v64, 77);
	memcpy(&v64, s + 16, 8);
	CHECK_EQ(v64, 123456789);
	memcpy(&v32, s + 28, 4);
	CHECK_EQ(v32, 11);
	memcpy(&v32, s + 32, 4);
	CHECK_EQ(v32, 3 * 12 + 4 + 5 + 4 + 4 + 3);
	memcpy(&v32, s + 36, 4);
	CHECK_EQ(v32, 6);
	CHECK(s[40] == RTTR_S64 && s[41] == 0 && s[42] == 8 && s[43] == 0, "first record header");
	CHECK(s[76] == RTTR_STRING && s[78] == 5 && !memcmp(s + 80, "hello", 5), "string record");
	CHECK(s[89] == RTTR_BYTES && s[91] == 3 && !memcmp(s + 93, "\0\1\377", 3), "bytes record");
	CHECK_EQ(*hdr_word(&r, 64), 1);

	struct rttr_record got;
	memset(&got, 0xa5, sizeof(got));
	CHECK(rttr_read(&r, rd, 0, &got) == 1, "read");
	CHECK(got.token == 77 && got.time_ns == 123456789 && got.pid == 10 && got.tid == 11,
	      "fixed fields");
	CHECK_EQ(got.nr_captures, 6);
	CHECK(got.captures[0].type == RTTR_S64 && got.captures[0].i == -5, "s64");
	CHECK(got.captures[1].type == RTTR_U64 && got.captures[1].u == UINT64_MAX, "u64");
	CHECK(got.captures[2].type == RTTR_DOUBLE && got.captures[2].d == 2.5, "double");
	CHECK(got.captures[3].type == RTTR_STRING && got.captures[3].s.len == 5 &&
		      !memcmp(got.captures[3].s.p, "hello", 5), "string");
	CHECK(got.captures[4].type == RTTR_NONE, "none");
	CHECK(got.captures[5].type == RTTR_BYTES && got.captures[5].s.len == 3 &&
		      !memcmp(got.captures[5].s.p, "\0\1\377", 3), "bytes");
	CHECK_EQ(*hdr_word(&r, 128), 1);
	CHECK(rttr_read(&r, rd, 0, &got) == 0, "nothing more");

	unit_case = "a string cut to the slot";
	char big[400];
	memset(big, 'x', sizeof(big));
	rec.nr_captures = 2;
	rec.captures[0] = (struct rttr_value){ .type = RTTR_STRING, .s = { big, sizeof(big) } };
	rec.captures[1] = (struct rttr_value){ .type = RTTR_U64, .u = 1 };
	CHECK(rttr_write(&w, &rec), "write");
	CHECK(rttr_read(&r, rd, 0, &got) == 1, "read");
	CHECK(got.nr_captures == 1 && got.captures[0].s.len == 128 - 40 - 4,
	      "cut to %zu, %u captures", got.captures[0].s.len, got.nr_captures);
	rttr_unmap(&w);
	rttr_unmap(&r);
	free(rd);
}

static void test_full(void)
{
	unit_case = "full ring";
	struct rttr_ring w, r;
	make(&w, &r, 4, 64);
	struct rttr_reader *rd = calloc(1, sizeof(*rd));
	struct rttr_record rec = { .token = 1, .nr_captures = 1 };
	unsigned ok = 0;
	for (uint64_t i = 0; i < 10; i++) {
		rec.captures[0] = (struct rttr_value){ .type = RTTR_U64, .u = i };
		ok += rttr_write(&w, &rec);
	}
	CHECK_EQ(ok, 4);
	CHECK_EQ(rttr_lost(&r, rd), 6);
	CHECK_EQ(rttr_lost(&r, rd), 0);
	struct rttr_record got;
	for (uint64_t i = 0; i < 4; i++)
		CHECK(rttr_read(&r, rd, 0, &got) == 1 && got.captures[0].u == i, "slot %llu",
		      (unsigned long long)i);
	CHECK(rttr_read(&r, rd, 0, &got) == 0, "empty");
	CHECK(rttr_write(&w, &rec), "room again after the reader");
	rttr_unmap(&w);
	rttr_unmap(&r);
	free(rd);
}

/* A committed slot for the reader's next ticket with these bytes after
 * the fixed part. */
static void plant(struct rttr_ring *r, uint64_t ticket, uint32_t len, uint32_t nr,
		  const void *body, size_t body_len)
{
	char *s = slot(r, ticket);
	memset(s, 0, r->slot_size);
	memcpy(s + 32, &len, 4);
	memcpy(s + 36, &nr, 4);
	memcpy(s + 40, body, body_len);
	*hdr_word(r, 64) = ticket + 1;
	uint64_t c = ticket + 1;
	memcpy(s, &c, 8);
}

static void test_hostile(void)
{
	unit_case = "hostile slots";
	struct rttr_ring w, r;
	make(&w, &r, 8, 128);
	struct rttr_reader *rd = calloc(1, sizeof(*rd));
	struct rttr_record got;
	static const struct {
		uint32_t len, nr;
		char body[16];
		size_t body_len;
		const char *what;
	} bad[] = {
		{ 89, 0, { 0 }, 0, "len past the slot" },
		{ 0, RTTR_MAX_CAPTURES + 1, { 0 }, 0, "too many captures" },
		{ 4, 1, { 9, 0, 0, 0 }, 4, "unknown type" },
		{ 8, 1, { RTTR_U64, 0, 4, 0, 1, 2, 3, 4 }, 8, "a number of 4 bytes" },
		{ 8, 1, { RTTR_STRING, 0, 9, 0, 'a' }, 8, "a string past len" },
		{ 6, 1, { RTTR_NONE, 0, 2, 0 }, 4, "none with a value" },
		{ 8, 1, { RTTR_NONE, 0, 0, 0 }, 4, "bytes after the last record" },
		{ 2, 1, { RTTR_NONE, 0, 0, 0 }, 4, "a record header past len" },
	};
	uint64_t t = 0;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++, t++) {
		plant(&r, t, bad[i].len, bad[i].nr, bad[i].body, bad[i].body_len);
		CHECK(rttr_read(&r, rd, 0, &got) == -EPROTO, "%s accepted", bad[i].what);
	}
	CHECK_EQ(rd->refused, sizeof(bad) / sizeof(bad[0]));
	unit_case = "random slots";
	srand(7);
	unsigned parsed = 0;
	for (int i = 0; i < 20000; i++, t++) {
		char body[88];
		for (size_t k = 0; k < sizeof(body); k++)
			body[k] = (char)(rand() % 8 < 6 ? rand() % 6 : rand());
		uint32_t len = (uint32_t)(rand() % 100), nr = (uint32_t)(rand() % 6);
		plant(&r, t, len, nr, body, sizeof(body));
		int ret = rttr_read(&r, rd, 0, &got);
		CHECK(ret == 1 || ret == -EPROTO, "read returned %d", ret);
		if (ret == 1) {
			parsed++;
			for (uint32_t k = 0; k < got.nr_captures; k++)
				if (got.captures[k].type == RTTR_STRING)
					CHECK(got.captures[k].s.p >= rd->copy &&
						      got.captures[k].s.p + got.captures[k].s.len <=
							      rd->copy + 128,
					      "string out of the copy");
		}
	}
	CHECK(parsed > 0, "no random slot parsed");
	CHECK_EQ(rd->tail, t);

	unit_case = "writer dead between ticket and commit";
	*hdr_word(&r, 64) = t + 1;	/* taken, never committed */
	CHECK(rttr_read(&r, rd, 1000, &got) == 0, "not yet");
	CHECK(rttr_read(&r, rd, 1000 + RTTR_STUCK_MS - 1, &got) == 0, "not yet");
	CHECK(rttr_read(&r, rd, 1000 + RTTR_STUCK_MS, &got) == 0 && rd->given_up == 1 &&
		      rd->tail == t + 1, "given up");
	t++;

	unit_case = "scribbled header";
	struct rttr_record rec = { .token = 3 };
	*hdr_word(&r, 128) = t + 1000;	/* tail ahead of head */
	CHECK(!rttr_write(&w, &rec), "written with tail ahead of head");
	*hdr_word(&r, 128) = 0;		/* tail far behind: the ring looks full */
	CHECK(!rttr_write(&w, &rec), "written into a full ring");
	uint32_t huge = 1u << 20;
	memcpy(r.base + 8, &huge, 4);	/* nr_slots: the writer kept its copy */
	*hdr_word(&r, 128) = t;
	*hdr_word(&r, 64) = t;
	CHECK(rttr_write(&w, &rec), "a write after the header changed");
	CHECK_EQ(rttr_lost(&r, rd), 2);
	rttr_unmap(&w);
	rttr_unmap(&r);
	free(rd);
}

static void test_attach(void)
{
	unit_case = "attach refusals";
	struct rttr_ring r;
	int fd = memfd_create("t", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	CHECK(ftruncate(fd, (off_t)rttr_size(4, 64)) == 0, "ftruncate");
	CHECK(rttr_attach(&r, fd) == -EPROTO, "an unsealed memfd");
	CHECK(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) == 0, "seal");
	CHECK(rttr_attach(&r, fd) == -EPROTO, "no magic");
	uint32_t hdr[4] = { RTTR_MAGIC, RTTR_VERSION, 8, 64 };
	CHECK(pwrite(fd, hdr, sizeof(hdr), 0) == sizeof(hdr), "pwrite");
	CHECK(rttr_attach(&r, fd) == -EPROTO, "a size for 8 slots in a memfd of 4");
	hdr[2] = 4;
	hdr[3] = 60;
	CHECK(pwrite(fd, hdr, sizeof(hdr), 0) == sizeof(hdr), "pwrite");
	CHECK(rttr_attach(&r, fd) == -EPROTO, "a slot size not a multiple of 8");
	hdr[3] = 64;
	CHECK(pwrite(fd, hdr, sizeof(hdr), 0) == sizeof(hdr), "pwrite");
	CHECK(rttr_attach(&r, fd) == 0, "a good ring");
	rttr_unmap(&r);
	close(fd);
	CHECK(rttr_size(3, 64) == 0 && rttr_size(4, 32) == 0 &&
		      rttr_size(RTTR_MAX_SLOTS * 2, 64) == 0, "geometries refused");
}

#define THREADS 4
#define PER_THREAD 200000

struct writer_arg {
	const struct rttr_ring *w;
	uint64_t id;
	uint64_t written;
};

static void *writer(void *p)
{
	struct writer_arg *a = p;
	struct rttr_record rec = { .token = 5, .nr_captures = 2 };
	for (uint64_t i = 0; i < PER_THREAD; i++) {
		rec.captures[0] = (struct rttr_value){ .type = RTTR_U64, .u = a->id };
		rec.captures[1] = (struct rttr_value){ .type = RTTR_U64, .u = i };
		a->written += rttr_write(a->w, &rec);
	}
	return NULL;
}

static void test_threads(void)
{
	unit_case = "four writers, one reader";
	struct rttr_ring w, r;
	make(&w, &r, 64, 64);
	struct rttr_reader *rd = calloc(1, sizeof(*rd));
	pthread_t th[THREADS];
	struct writer_arg args[THREADS];
	for (uint64_t i = 0; i < THREADS; i++) {
		/* The reader's mapping: ThreadSanitizer tells the writers'
		 * acquire loads of tail from the reader's release stores only
		 * at one address (two mappings of the memfd are two to it). */
		args[i] = (struct writer_arg){ .w = &r, .id = i };
		pthread_create(&th[i], NULL, writer, &args[i]);
	}
	uint64_t next[THREADS] = { 0 }, read = 0, lost = 0, disorder = 0, bad = 0;
	int done = 0;
	bool joined[THREADS] = { false };
	struct rttr_record got;
	for (;;) {
		int ret = rttr_read(&r, rd, 0, &got);
		if (ret == 1) {
			read++;
			uint64_t id = got.captures[0].u, seq = got.captures[1].u;
			if (got.nr_captures != 2 || id >= THREADS || got.token != 5) {
				bad++;
				continue;
			}
			disorder += seq < next[id];
			next[id] = seq + 1;
		} else if (ret < 0) {
			bad++;
		} else if (done == THREADS) {
			break;
		} else if (__atomic_load_n(hdr_word(&r, 64), __ATOMIC_ACQUIRE) == rd->tail) {
			/* Empty: are the writers all finished? Once they
			 * are, one more pass reads what they left. */
			for (int i = 0; i < THREADS; i++)
				if (!joined[i] && pthread_tryjoin_np(th[i], NULL) == 0) {
					joined[i] = true;
					done++;
				}
		}
	}
	lost = rttr_lost(&r, rd);
	uint64_t written = 0;
	for (int i = 0; i < THREADS; i++)
		written += args[i].written;
	CHECK_EQ(bad, 0);
	CHECK_EQ(disorder, 0);
	CHECK_EQ(read, written);
	CHECK_EQ(read + lost, (uint64_t)THREADS * PER_THREAD);
	CHECK(read > 0, "nothing read");
	printf("threads: %llu read, %llu lost\n", (unsigned long long)read,
	       (unsigned long long)lost);
	rttr_unmap(&w);
	rttr_unmap(&r);
	free(rd);
}

int main(void)
{
	test_round_trip();
	test_full();
	test_hostile();
	test_attach();
	test_threads();
	return unit_finish();
}
