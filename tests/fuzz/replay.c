/*
 * replay.c - main() for a harness outside libFuzzer: runs the harness on
 * every file of the directories (or files) given, in name order, once
 * each, and prints how many. make check builds each harness with it under
 * AddressSanitizer and UBSan and replays its corpus (tests/fuzz/corpus).
 * Exit 0, or 1 when an input cannot be read (a finding aborts).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	size_t cap = 4096, len = 0;
	uint8_t *buf = malloc(cap);
	for (size_t n; buf && (n = fread(buf + len, 1, cap - len, f)) > 0;) {
		len += n;
		if (len == cap) {
			uint8_t *nb = realloc(buf, cap * 2);
			if (!nb) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = nb;
			cap *= 2;
		}
	}
	int bad = ferror(f) || !buf;
	fclose(f);
	if (bad) {
		fprintf(stderr, "replay: %s: cannot read it\n", path);
		free(buf);
		return -1;
	}
	/* An exact-size copy, so that a read past the input's end is one
	 * AddressSanitizer sees. */
	uint8_t *exact = malloc(len ? len : 1);
	if (!exact) {
		free(buf);
		return -1;
	}
	memcpy(exact, buf, len);
	free(buf);
	LLVMFuzzerTestOneInput(exact, len);
	free(exact);
	return 0;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
	unsigned ran = 0;
	int status = 0;
	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) < 0) {
			fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
			return 1;
		}
		if (!S_ISDIR(st.st_mode)) {
			status |= run_file(argv[i]) < 0;
			ran++;
			continue;
		}
		struct dirent **names;
		int n = scandir(argv[i], &names, NULL, NULL);
		if (n < 0) {
			fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
			return 1;
		}
		qsort(names, (size_t)n, sizeof(*names), by_name);
		for (int k = 0; k < n; k++) {
			char path[4096];
			if (names[k]->d_name[0] != '.') {
				snprintf(path, sizeof(path), "%s/%s", argv[i], names[k]->d_name);
				status |= run_file(path) < 0;
				ran++;
			}
			free(names[k]);
		}
		free(names);
	}
	printf("replayed %u inputs\n", ran);
	return status;
}
