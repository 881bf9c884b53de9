/*
 * harness.c - command line, threads, pinning, warm-up, statistics and CSV
 * output of the benchmark programs (see bench.h for the method).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

/* Samples above this (after subtracting the empty measurement) were
 * interrupted or preempted (the slowest case measured, a write(2) to
 * trace_marker, stays under 1 us at p99): kept in the percentiles, left
 * out of the average and standard deviation (Gebai & Dagenais 2018 discarded
 * interrupted samples, with interrupts disabled and an NMI count). */
#define BENCH_OUTLIER_NS 5000.0

/* Latency samples are taken in chunks, alternating with the empty
 * measurement, so both see the same conditions. */
#define BENCH_LAT_CHUNK 1000

/* The batch loop is timed in this many chunks (an even number). */
#define BENCH_BATCH_CHUNKS 20

struct bench_opts {
	const char *case_name;
	const char *section;
	const char *tracer;
	unsigned rep;
	unsigned threads;
	double batch_ms;
	size_t samples;
	double warm_ms;
	uint64_t warm_events;
	double warm_cap_ms;
	bool pin;
	const char *cpu_list;	/* --cpus: thread i runs on entry i % n */
	const char *raw_path;
	size_t raw_max;
	/* throughput mode */
	bool throughput;
	uint64_t events;	/* flat out, exactly this many per thread */
	double duration_ms;	/* or for this long ... */
	double rate;		/* ... at this many events/s per thread (0: flat out) */
};

/* --case may name several cases (comma-separated): they then run in the
 * same process, their chunks interleaved (A B C A B C ...), so that their
 * differences are measured at the same moment. */
#define BENCH_MAX_SEL 16

struct bench_result {
	uint64_t batch_n;
	double batch_ns, batch_wall_ns;
	int64_t *lat;		/* latency samples, in ticks */
};

struct bench_thread {
	unsigned idx;
	int cpu;
	pthread_t th;
	struct bench_result res[BENCH_MAX_SEL];
	int64_t *empty;		/* the empty measurement, in ticks */
	size_t nlat;
	/* throughput */
	uint64_t emitted, elapsed_ns, cpu_ns;	/* cpu_ns: the thread's CPU time */
};

static struct bench_opts opt;
static const struct bench_case *sel[BENCH_MAX_SEL];
static unsigned nsel;
static pthread_barrier_t barrier;
static int cpus[CPU_SETSIZE];
static int nr_cpus;

BENCH_DEFINE(bench_empty, BENCH_USE(v))

static void usage(FILE *f, const char *prog, const struct bench_case *cases,
		  size_t nr)
{
	fprintf(f,
		"usage: %s --case NAME [options]\n"
		"  --case NAME[,NAME...]  what to measure (below); several cases run in\n"
		"                     one process, their chunks interleaved\n"
		"  --threads N        measuring threads, pinned round-robin from the\n"
		"                     last allowed CPU down (default 1)\n"
		"  --cpus LIST        pin thread i to entry i %% n of LIST (e.g. 1,0)\n"
		"  --no-pin           do not pin the threads\n"
		"  --batch-ms MS      length of the batch loop (default 200)\n"
		"  --samples N        per-call latency samples per thread (default 100000)\n"
		"  --warm-ms MS, --warm-events N, --warm-cap-ms MS\n"
		"                     warm-up: at least MS and N calls, at most CAP ms\n"
		"                     (defaults 50, 400000, 1000)\n"
		"  --section S --tracer T --rep R   labels copied into the output\n"
		"  --raw FILE         append up to --raw-max (2000) raw latency samples\n"
		"                     per thread to FILE\n"
		"  --throughput       emit events instead of measuring: --events N flat\n"
		"                     out, or --duration-ms D [--rate EVENTS_PER_S]\n"
		"output (stdout, CSV; batch_ns: median over 20 chunks of the thread's CPU\n"
		"time / calls, batch_wall_ns: wall time of the whole batch / calls;\n"
		"latencies in ns, minus empty_ns, the median empty measurement):\n"
		"  R,section,tracer,case,threads,rep,tid,cpu,batch_n,batch_ns,batch_wall_ns,\n"
		"    lat_n,lat_dropped,empty_ns,avg,std,p50,p90,p99,max,tsc_mhz\n"
		"  T,section,tracer,case,threads,rep,tid,cpu,emitted,elapsed_ns,rate,cpu_ns\n"
		"cases:\n",
		prog);
	for (size_t i = 0; i < nr; i++)
		fprintf(f, "  %-12s %s\n", cases[i].name, cases[i].help);
}

static int parse_opts(int argc, char **argv, const struct bench_case *cases,
		      size_t nr)
{
	enum { O_CASE = 256, O_THREADS, O_CPUS, O_NOPIN, O_BATCH, O_SAMPLES, O_WARM_MS,
	       O_WARM_EV, O_WARM_CAP, O_SECTION, O_TRACER, O_REP, O_RAW,
	       O_RAW_MAX, O_TP, O_EVENTS, O_DURATION, O_RATE, O_HELP };
	static const struct option lo[] = {
		{ "case", required_argument, NULL, O_CASE },
		{ "threads", required_argument, NULL, O_THREADS },
		{ "cpus", required_argument, NULL, O_CPUS },
		{ "no-pin", no_argument, NULL, O_NOPIN },
		{ "batch-ms", required_argument, NULL, O_BATCH },
		{ "samples", required_argument, NULL, O_SAMPLES },
		{ "warm-ms", required_argument, NULL, O_WARM_MS },
		{ "warm-events", required_argument, NULL, O_WARM_EV },
		{ "warm-cap-ms", required_argument, NULL, O_WARM_CAP },
		{ "section", required_argument, NULL, O_SECTION },
		{ "tracer", required_argument, NULL, O_TRACER },
		{ "rep", required_argument, NULL, O_REP },
		{ "raw", required_argument, NULL, O_RAW },
		{ "raw-max", required_argument, NULL, O_RAW_MAX },
		{ "throughput", no_argument, NULL, O_TP },
		{ "events", required_argument, NULL, O_EVENTS },
		{ "duration-ms", required_argument, NULL, O_DURATION },
		{ "rate", required_argument, NULL, O_RATE },
		{ "help", no_argument, NULL, O_HELP },
		{ NULL, 0, NULL, 0 },
	};
	opt = (struct bench_opts){
		.section = "micro", .tracer = "-", .threads = 1, .batch_ms = 200,
		.samples = 100000, .warm_ms = 50, .warm_events = 400000,
		.warm_cap_ms = 1000, .pin = true, .raw_max = 2000,
	};
	int c;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		char *end = NULL;
		errno = 0;
		switch (c) {
		case O_CASE: opt.case_name = optarg; break;
		case O_THREADS: opt.threads = (unsigned)strtoul(optarg, &end, 10); break;
		case O_CPUS: opt.cpu_list = optarg; break;
		case O_NOPIN: opt.pin = false; break;
		case O_BATCH: opt.batch_ms = strtod(optarg, &end); break;
		case O_SAMPLES: opt.samples = strtoull(optarg, &end, 10); break;
		case O_WARM_MS: opt.warm_ms = strtod(optarg, &end); break;
		case O_WARM_EV: opt.warm_events = strtoull(optarg, &end, 10); break;
		case O_WARM_CAP: opt.warm_cap_ms = strtod(optarg, &end); break;
		case O_SECTION: opt.section = optarg; break;
		case O_TRACER: opt.tracer = optarg; break;
		case O_REP: opt.rep = (unsigned)strtoul(optarg, &end, 10); break;
		case O_RAW: opt.raw_path = optarg; break;
		case O_RAW_MAX: opt.raw_max = strtoull(optarg, &end, 10); break;
		case O_TP: opt.throughput = true; break;
		case O_EVENTS: opt.events = strtoull(optarg, &end, 10); break;
		case O_DURATION: opt.duration_ms = strtod(optarg, &end); break;
		case O_RATE: opt.rate = strtod(optarg, &end); break;
		case O_HELP: usage(stdout, argv[0], cases, nr); exit(0);
		default: usage(stderr, argv[0], cases, nr); return -1;
		}
		if (end && (*end || errno)) {
			fprintf(stderr, "%s: bad value '%s'\n", argv[0], optarg);
			return -1;
		}
	}
	if (optind != argc || !opt.case_name || opt.threads == 0 ||
	    opt.threads > 1024 || opt.batch_ms <= 0 || opt.samples == 0 ||
	    (opt.throughput && !opt.events && opt.duration_ms <= 0)) {
		usage(stderr, argv[0], cases, nr);
		return -1;
	}
	for (const char *p = opt.case_name; *p;) {
		size_t len = strcspn(p, ",");
		const struct bench_case *found = NULL;
		for (size_t i = 0; i < nr; i++)
			if (strlen(cases[i].name) == len && !strncmp(cases[i].name, p, len))
				found = &cases[i];
		if (!found || nsel == BENCH_MAX_SEL) {
			fprintf(stderr, "%s: unknown case '%.*s' (or more than %d)\n",
				argv[0], (int)len, p, BENCH_MAX_SEL);
			usage(stderr, argv[0], cases, nr);
			return -1;
		}
		sel[nsel++] = found;
		p += len + (p[len] == ',');
	}
	if (nsel == 0 || (opt.throughput && nsel != 1)) {
		usage(stderr, argv[0], cases, nr);
		return -1;
	}
	return 0;
}

/* The CPUs to run on, in order: --cpus, or the process's CPUs from the
 * last one down (one thread runs on the last CPU, two on the last two,
 * more wrap around). */
static int read_cpus(void)
{
	cpu_set_t set;
	nr_cpus = 0;
	if (opt.cpu_list) {
		const char *p = opt.cpu_list;
		while (*p && nr_cpus < CPU_SETSIZE) {
			char *end;
			long c = strtol(p, &end, 10);
			if (end == p || c < 0 || c >= CPU_SETSIZE || (*end && *end != ','))
				return -1;
			cpus[nr_cpus++] = (int)c;
			p = *end ? end + 1 : end;
		}
		return nr_cpus ? 0 : -1;
	}
	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		for (int i = 0; i < CPU_SETSIZE; i++)
			if (CPU_ISSET(i, &set))
				cpus[nr_cpus++] = i;
	if (nr_cpus == 0)
		cpus[nr_cpus++] = 0;
	for (int i = 0; i < nr_cpus / 2; i++) {
		int t = cpus[i];
		cpus[i] = cpus[nr_cpus - 1 - i];
		cpus[nr_cpus - 1 - i] = t;
	}
	return 0;
}

static int pin_self(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static void run_throughput(struct bench_thread *t)
{
	const uint64_t chunk = 64;
	uint64_t sent = 0;
	pthread_barrier_wait(&barrier);
	uint64_t start = bench_now_ns(), now = start, cpu0 = bench_thread_ns();
	if (opt.events) {
		sel[0]->batch(opt.events);
		sent = opt.events;
		now = bench_now_ns();
	} else {
		uint64_t dur = (uint64_t)(opt.duration_ms * 1e6);
		for (;;) {
			now = bench_now_ns();
			uint64_t el = now - start;
			if (el >= dur)
				break;
			if (opt.rate > 0 &&
			    (double)sent >= (double)el * opt.rate / 1e9 + (double)chunk) {
				__builtin_ia32_pause();
				continue;
			}
			sel[0]->batch(chunk);
			sent += chunk;
		}
	}
	t->cpu_ns = bench_thread_ns() - cpu0;
	t->emitted = sent;
	t->elapsed_ns = now - start;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static void *worker(void *arg)
{
	struct bench_thread *t = arg;
	if (opt.pin && pin_self(t->cpu) != 0)
		t->cpu = -1;
	if (!opt.pin)
		t->cpu = -1;
	for (unsigned c = 0; c < nsel; c++) {
		if (!sel[c]->thread_init)
			continue;
		int r = sel[c]->thread_init();
		if (r > 0) {
			fprintf(stderr, "case %s: not available here\n", sel[c]->name);
			exit(BENCH_EXIT_UNAVAILABLE);
		}
		if (r < 0) {
			fprintf(stderr, "case %s: per-thread setup failed\n", sel[c]->name);
			exit(1);
		}
	}
	if (opt.throughput) {
		run_throughput(t);
		return NULL;
	}

	/* Touch the sample arrays before anything is measured. */
	memset(t->empty, 0, t->nlat * sizeof(int64_t));
	for (unsigned c = 0; c < nsel; c++)
		memset(t->res[c].lat, 0, t->nlat * sizeof(int64_t));

	/* Warm-up to the steady state: the buffers have been filled at least
	 * once (--warm-events is a few times their size), every path of the
	 * probe has run, the code and data are in cache and the TLB. Then the
	 * batch size for about --batch-ms. */
	for (unsigned c = 0; c < nsel; c++) {
		uint64_t w0 = bench_now_ns(), done = 0;
		for (;;) {
			sel[c]->batch(10000);
			done += 10000;
			double el = (double)(bench_now_ns() - w0) / 1e6;
			if (el >= opt.warm_ms &&
			    (done >= opt.warm_events || el >= opt.warm_cap_ms))
				break;
		}
		uint64_t c0 = bench_now_ns();
		sel[c]->batch(10000);
		double per_call = (double)(bench_now_ns() - c0) / 10000.0;
		if (per_call < 0.1)
			per_call = 0.1;
		uint64_t n = (uint64_t)(opt.batch_ms * 1e6 / per_call);
		n = n < 10000 ? 10000 : n;
		t->res[c].batch_n = (n + BENCH_BATCH_CHUNKS - 1) / BENCH_BATCH_CHUNKS *
				    BENCH_BATCH_CHUNKS;
	}

	/* The batch in BENCH_BATCH_CHUNKS chunks, each timed with the
	 * thread's CPU time; the median chunk is the result (a chunk hit by
	 * the host or another process does not count). */
	double per[BENCH_MAX_SEL][BENCH_BATCH_CHUNKS];
	uint64_t wall[BENCH_MAX_SEL] = { 0 };
	pthread_barrier_wait(&barrier);
	for (int k = 0; k < BENCH_BATCH_CHUNKS; k++) {
		for (unsigned c = 0; c < nsel; c++) {
			uint64_t chunk = t->res[c].batch_n / BENCH_BATCH_CHUNKS;
			uint64_t w0 = bench_now_ns(), k0 = bench_thread_ns();
			sel[c]->batch(chunk);
			per[c][k] = (double)(bench_thread_ns() - k0) / (double)chunk;
			wall[c] += bench_now_ns() - w0;
		}
	}
	for (unsigned c = 0; c < nsel; c++) {
		qsort(per[c], BENCH_BATCH_CHUNKS, sizeof(double), cmp_double);
		t->res[c].batch_ns = (per[c][BENCH_BATCH_CHUNKS / 2 - 1] +
				      per[c][BENCH_BATCH_CHUNKS / 2]) / 2;
		t->res[c].batch_wall_ns = (double)wall[c] / (double)t->res[c].batch_n;
	}

	pthread_barrier_wait(&barrier);
	for (size_t off = 0; off < t->nlat; off += BENCH_LAT_CHUNK) {
		size_t n = t->nlat - off < BENCH_LAT_CHUNK ? t->nlat - off : BENCH_LAT_CHUNK;
		bench_empty_lat(t->empty + off, n);
		for (unsigned c = 0; c < nsel; c++)
			sel[c]->lat(t->res[c].lat + off, n);
	}
	return NULL;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

static int64_t pct(const int64_t *sorted, size_t n, double p)
{
	size_t i = (size_t)(p * (double)(n - 1) + 0.5);
	return sorted[i < n ? i : n - 1];
}

/* The empty measurement's median, in ticks (sorts t->empty). */
static int64_t empty_median(struct bench_thread *t)
{
	qsort(t->empty, t->nlat, sizeof(int64_t), cmp_i64);
	return pct(t->empty, t->nlat, 0.5);
}

static void report_latency(struct bench_thread *t, unsigned c, int64_t empty_med,
			   double tsc_mhz, FILE *raw)
{
	struct bench_result *r = &t->res[c];
	int64_t *lat = r->lat;
	size_t n = t->nlat;
	double tick_ns = 1000.0 / tsc_mhz;

	/* Raw samples first (in measurement order), then the statistics. */
	if (raw) {
		size_t step = opt.raw_max ? (n + opt.raw_max - 1) / opt.raw_max : n + 1;
		for (size_t i = 0; opt.raw_max && i < n; i += step)
			fprintf(raw, "%s,%s,%s,%u,%u,%u,%zu,%.2f\n", opt.section,
				opt.tracer, sel[c]->name, opt.threads, opt.rep,
				t->idx, i, (double)(lat[i] - empty_med) * tick_ns);
	}
	for (size_t i = 0; i < n; i++)
		lat[i] -= empty_med;
	qsort(lat, n, sizeof(int64_t), cmp_i64);

	double sum = 0, sum2 = 0;
	size_t kept = 0;
	for (size_t i = 0; i < n; i++) {
		double ns = (double)lat[i] * tick_ns;
		if (ns > BENCH_OUTLIER_NS)
			continue;
		sum += ns;
		sum2 += ns * ns;
		kept++;
	}
	double avg = kept ? sum / (double)kept : NAN;
	double var = kept > 1 ? (sum2 - sum * sum / (double)kept) / (double)(kept - 1) : 0;
	printf("R,%s,%s,%s,%u,%u,%u,%d,%" PRIu64 ",%.3f,%.3f,%zu,%zu,%.2f,"
	       "%.2f,%.2f,%.2f,%.2f,%.2f,%.1f,%.1f\n",
	       opt.section, opt.tracer, sel[c]->name, opt.threads, opt.rep,
	       t->idx, t->cpu, r->batch_n, r->batch_ns, r->batch_wall_ns, n,
	       n - kept, (double)empty_med * tick_ns, avg,
	       var > 0 ? sqrt(var) : 0.0,
	       (double)pct(lat, n, 0.50) * tick_ns,
	       (double)pct(lat, n, 0.90) * tick_ns,
	       (double)pct(lat, n, 0.99) * tick_ns,
	       (double)lat[n - 1] * tick_ns, tsc_mhz);
}

int bench_main(int argc, char **argv, const struct bench_case *cases,
	       size_t nr_cases)
{
	if (parse_opts(argc, argv, cases, nr_cases) < 0)
		return 2;
	if (read_cpus() < 0) {
		fprintf(stderr, "%s: bad --cpus '%s'\n", argv[0], opt.cpu_list);
		return 2;
	}

	struct bench_thread *th = calloc(opt.threads, sizeof(*th));
	if (!th)
		return 1;
	for (unsigned i = 0; i < opt.threads; i++) {
		th[i].idx = i;
		th[i].cpu = cpus[i % (unsigned)nr_cpus];
		if (!opt.throughput) {
			th[i].nlat = opt.samples;
			th[i].empty = malloc(opt.samples * sizeof(int64_t));
			if (!th[i].empty) {
				fprintf(stderr, "out of memory\n");
				return 1;
			}
			for (unsigned c = 0; c < nsel; c++)
				if (!(th[i].res[c].lat = malloc(opt.samples * sizeof(int64_t)))) {
					fprintf(stderr, "out of memory\n");
					return 1;
				}
		}
	}
	pthread_barrier_init(&barrier, NULL, opt.threads);

	uint64_t tsc0 = bench_rdtsc(), ns0 = bench_now_ns();
	for (unsigned i = 0; i < opt.threads; i++) {
		int ret = pthread_create(&th[i].th, NULL, worker, &th[i]);
		if (ret) {
			fprintf(stderr, "pthread_create: %s\n", strerror(ret));
			return 1;
		}
	}
	for (unsigned i = 0; i < opt.threads; i++)
		pthread_join(th[i].th, NULL);

	if (opt.throughput) {
		for (unsigned i = 0; i < opt.threads; i++)
			printf("T,%s,%s,%s,%u,%u,%u,%d,%" PRIu64 ",%" PRIu64 ",%.0f,%" PRIu64 "\n",
			       opt.section, opt.tracer, sel[0]->name, opt.threads,
			       opt.rep, i, th[i].cpu, th[i].emitted,
			       th[i].elapsed_ns, opt.rate, th[i].cpu_ns);
		fflush(stdout);
		return 0;
	}

	/* TSC frequency over the run (at least 50 ms). */
	uint64_t ns1 = bench_now_ns();
	if (ns1 - ns0 < 50000000) {
		struct timespec w = { 0, (long)(50000000 - (ns1 - ns0)) };
		nanosleep(&w, NULL);
	}
	uint64_t tsc1 = bench_rdtsc();
	ns1 = bench_now_ns();
	double tsc_mhz = (double)(tsc1 - tsc0) * 1000.0 / (double)(ns1 - ns0);

	FILE *raw = NULL;
	if (opt.raw_path && !(raw = fopen(opt.raw_path, "a")))
		fprintf(stderr, "%s: cannot open %s\n", argv[0], opt.raw_path);
	for (unsigned i = 0; i < opt.threads; i++) {
		int64_t em = empty_median(&th[i]);
		for (unsigned c = 0; c < nsel; c++)
			report_latency(&th[i], c, em, tsc_mhz, raw);
	}
	if (raw)
		fclose(raw);
	fflush(stdout);
	for (unsigned i = 0; i < opt.threads; i++) {
		free(th[i].empty);
		for (unsigned c = 0; c < nsel; c++)
			free(th[i].res[c].lat);
	}
	free(th);
	return 0;
}
