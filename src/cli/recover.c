/*
 * recover.c - `ringtrace recover DIR -o OUT`: the traces the buffer sets
 * kept under DIR (`record --shm-path DIR`) hold, written out after their
 * program died (docs/recovery.md): one trace per buffer set, OUT/NAME,
 * through the consumer (src/consumer/recovery.h).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/fs_util.h"
#include "../consumer/recovery.h"
#include "cli.h"

static void recover_usage(FILE *f)
{
	fprintf(f,
		"usage: ringtrace recover [OPTIONS] DIR -o OUT\n"
		"\n"
		"Write the CTF traces of the buffers a program recording with\n"
		"--shm-path DIR left there when it died (killed, crashed): every\n"
		"event committed and not yet written out, the last partly filled\n"
		"packets included. One trace per buffer set, OUT/NAME. The buffer\n"
		"files are read, never changed. Exit status: 0 when every buffer set\n"
		"was recovered, 1 when one could not be (the message says why).\n"
		"\n"
		"  -o, --output OUT  where the traces go (created; must be empty)\n"
		"  -q, --quiet       no line per buffer set\n"
		"  -h, --help        this help\n");
}

static const struct option recover_opts[] = {
	{ "output", required_argument, NULL, 'o' },
	{ "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names of DIR's buffer sets (NAME of NAME.ring), sorted: *names
 * malloc'ed, each malloc'ed. Returns how many, or -errno (message
 * printed). */
static int list_sets(const char *dir, char ***names)
{
	char err[PATH_MAX + 256];
	int dfd = rt_dir_open(dir, RT_DIR_SHARED, NULL, err, sizeof(err));
	if (dfd < 0) {
		cli_error("cannot read %s: %s", dir, err);
		return dfd;
	}
	DIR *d = fdopendir(dfd);
	if (!d) {
		int e = errno;
		close(dfd);
		cli_error("cannot read %s: %s", dir, strerror(e));
		return -e;
	}
	char **v = NULL;
	size_t n = 0, cap = 0;
	int ret = 0;
	struct dirent *e;
	const size_t sl = strlen(CONS_RING_SUFFIX);
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);
		if (l <= sl || strcmp(e->d_name + l - sl, CONS_RING_SUFFIX) ||
		    l - sl > CONS_RECOVERY_NAME_MAX)
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 16;
			char **nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				ret = -ENOMEM;
				break;
			}
			v = nv;
		}
		if (!(v[n] = strndup(e->d_name, l - sl))) {
			ret = -ENOMEM;
			break;
		}
		n++;
	}
	closedir(d);
	if (ret < 0) {
		for (size_t i = 0; i < n; i++)
			free(v[i]);
		free(v);
		cli_error("%s", strerror(-ret));
		return ret;
	}
	if (n)
		qsort(v, n, sizeof(*v), cmp_names);
	*names = v;
	return (int)n;
}

int cmd_recover(int argc, char **argv)
{
	const char *out = NULL;
	bool quiet = false;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":o:qh", recover_opts, NULL)) != -1) {
		switch (c) {
		case 'o': out = optarg; break;
		case 'q': quiet = true; break;
		case 'h': recover_usage(stdout); return 0;
		default: cli_bad_option(c, argv); return CLI_EXIT_USAGE;
		}
	}
	if (optind != argc - 1)
		return cli_usage_error(optind >= argc ? "no directory given: ringtrace recover "
							"DIR -o OUT"
						      : "one directory only: ringtrace recover DIR "
							"-o OUT");
	if (!out)
		return cli_usage_error("no output directory: ringtrace recover DIR -o OUT");
	const char *dir = argv[optind];
	char **names = NULL;
	int n = list_sets(dir, &names);
	if (n < 0)
		return CLI_EXIT_FAILURE;
	if (n == 0) {
		cli_error("no buffer files (*%s) in %s", CONS_RING_SUFFIX, dir);
		return CLI_EXIT_FAILURE;
	}
	/* Every buffer set is tried, whatever happened to the others. */
	const bool out_ok = cli_output_dir(out) == 0;
	int status = out_ok ? 0 : CLI_EXIT_FAILURE;
	for (int i = 0; i < n && out_ok; i++) {
		char path[PATH_MAX], err[PATH_MAX + 512];
		struct cons_recover_stats st;
		if (snprintf(path, sizeof(path), "%s/%s", out, names[i]) >= (int)sizeof(path)) {
			cli_error("%s/%s: %s", out, names[i], strerror(ENAMETOOLONG));
			status = CLI_EXIT_FAILURE;
			continue;
		}
		if (cons_recover(dir, names[i], path, &st, err, sizeof(err)) < 0) {
			cli_error("cannot recover %s: %s", names[i], err);
			status = CLI_EXIT_FAILURE;
			continue;
		}
		if (!quiet)
			fprintf(stderr,
				"%s: %llu events in %llu packets recovered into %s (%llu lost by "
				"the writers)\n",
				names[i], (unsigned long long)st.events,
				(unsigned long long)st.packets, path,
				(unsigned long long)st.events_discarded);
		if (st.cpus_torn)
			cli_error("%s: a writer died in the middle of an event on %u CPU(s): "
				  "what followed its slot was given up, the event counted as "
				  "discarded", names[i], st.cpus_torn);
		if (st.subbufs_skipped || st.packets_corrupt)
			cli_error("%s: %llu sub-buffers given up, %llu damaged packets dropped",
				  names[i], (unsigned long long)st.subbufs_skipped,
				  (unsigned long long)st.packets_corrupt);
	}
	for (int i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return status;
}
