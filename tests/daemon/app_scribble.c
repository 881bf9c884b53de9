/*
 * app_scribble.c - a traced program that damages the shared buffers it
 * maps, as a broken (or hostile) program of the same user could: the
 * per-uid buffers of a session are mapped writable by every program of the
 * user. Driven line by line on stdin like app_prog (one answer line per
 * command):
 *   pin CPU         run on CPU only from now on
 *   emit N          N events scribble:tick { seq = 0..N-1 }
 *   scribble MODE   damage every buffer set this process mapped, on the
 *                   CPU it is pinned to ("ok SETS"); MODE is one of
 *                     headers    random bytes over every sub-buffer's
 *                                packet header
 *                     stream_id  another stream id in every header
 *                     content    a content_size past the sub-buffer
 *                     counters   write_count, announced and every
 *                                commit_seq of the CPU changed
 *   exit            exit(0)
 * At start it prints "ready PID". The layout it relies on is the one
 * ringbuffer.h documents byte by byte (struct rb_shm_header and
 * struct rb_cpu_ctl), ctf_packet.h's for the packet header.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ringtrace/ringtrace.h>

#include "ctf/ctf_packet.h"
#include "ringbuffer/ringbuffer.h"

static int pinned = -1;

/* Damage one buffer set mapped at [lo, hi). Returns 1 if it was one. */
static int scribble_set(char *lo, char *hi, const char *mode)
{
	struct rb_shm_header h;
	if ((size_t)(hi - lo) < sizeof(h))
		return 0;
	memcpy(&h, lo, sizeof(h));
	if (memcmp(h.magic, RB_SHM_MAGIC, sizeof(h.magic)) || pinned < 0 ||
	    (uint32_t)pinned >= h.nr_cpus || h.total_size > (uint64_t)(hi - lo))
		return 0;
	struct rb_cpu_ctl *c = (struct rb_cpu_ctl *)(lo + h.cpu_ctl_offset +
						     (size_t)pinned * h.cpu_ctl_stride);
	char *data = lo + h.data_offset + (size_t)pinned * h.data_stride;
	uint32_t nr = h.num_subbuf + (h.mode == 1 ? 1 : 0);
	if (!strcmp(mode, "counters")) {
		c->write_count += 1ull << 40;
		c->announced += 12345;
		for (uint32_t i = 0; i < h.num_subbuf; i++)
			c->sb[i].commit_seq ^= 0x5a5a5a5a5a5aull;
		return 1;
	}
	for (uint32_t i = 0; i < nr; i++) {
		struct ctf_packet_header *p = (struct ctf_packet_header *)(data + i * h.subbuf_size);
		if (!strcmp(mode, "headers")) {
			for (size_t k = 0; k < sizeof(*p); k++)
				((unsigned char *)p)[k] = (unsigned char)(rand() >> 5);
		} else if (!strcmp(mode, "stream_id")) {
			p->stream_id += 7;
		} else if (!strcmp(mode, "content")) {
			p->content_size = h.subbuf_size * 8 * 1024;
		}
	}
	return 1;
}

/* Every buffer set in our mappings. */
static int scribble(const char *mode)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int sets = 0;
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		char perms[8];
		if (!strstr(line, "ringtrace-buffer") ||
		    sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) != 3 || perms[1] != 'w')
			continue;
		sets += scribble_set((char *)lo, (char *)hi, mode);
	}
	if (f)
		fclose(f);
	return sets;
}

int main(void)
{
	char line[256], mode[32];
	unsigned long long n;
	int cpu;
	setvbuf(stdout, NULL, _IOLBF, 0);
	srand(1);
	printf("ready %d\n", (int)getpid());
	while (fgets(line, sizeof(line), stdin)) {
		if (sscanf(line, "pin %d", &cpu) == 1) {
			cpu_set_t one;
			CPU_ZERO(&one);
			CPU_SET(cpu, &one);
			if (sched_setaffinity(0, sizeof(one), &one) == 0) {
				pinned = cpu;
				printf("ok\n");
			} else {
				printf("cannot pin\n");
			}
		} else if (sscanf(line, "emit %llu", &n) == 1) {
			for (uint64_t i = 0; i < n; i++)
				rt_event(scribble, tick, seq, i);
			printf("ok\n");
		} else if (sscanf(line, "scribble %31s", mode) == 1) {
			printf("ok %d\n", scribble(mode));
		} else if (!strncmp(line, "exit", 4)) {
			exit(0);
		} else {
			printf("unknown command\n");
		}
	}
	return 0;
}
