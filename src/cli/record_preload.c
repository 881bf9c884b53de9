/*
 * record_preload.c - `record --preload=libc,pthread,dl,func`: the
 * LD_PRELOAD helpers (src/preload, docs/preload.md) CMD runs with.
 *
 * The helpers are looked for beside this program: in the build tree
 * (src/cli/ringtrace -> src/preload/), then in the installed tree (BINDIR
 * -> LIBDIR, RT_BIN_TO_LIBDIR, set by CMake). Their absolute paths go to
 * LD_PRELOAD after the user's own entries (record_preload_env).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "record.h"

static const struct {
	const char *name;		/* --preload's */
	const char *file;
} helpers[] = {
	{ "libc", "libringtrace-libc-wrapper.so" },
	{ "pthread", "libringtrace-pthread-wrapper.so" },
	{ "dl", "libringtrace-dl.so" },
	{ "func", "libringtrace-cyg-profile.so" },
};

/* The helper `file`'s absolute path in out, or -ENOENT (message in err). */
static int find_helper(const char *file, char *out, size_t len, char *err, size_t errlen)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0) {
		snprintf(err, errlen, "cannot find this program's directory: %s", strerror(errno));
		return -ENOENT;
	}
	exe[n] = '\0';
	const char *dir = dirname(exe);
	const char *const places[] = { "../preload", RT_BIN_TO_LIBDIR };
	for (size_t i = 0; i < sizeof(places) / sizeof(places[0]); i++) {
		char path[PATH_MAX];
		if (snprintf(path, sizeof(path), "%s/%s/%s", dir, places[i], file) >=
		    (int)sizeof(path))
			continue;
		if (access(path, R_OK) == 0 && realpath(path, out) && strlen(out) < len)
			return 0;
	}
	snprintf(err, errlen, "cannot find %s in %s/%s or %s/../preload (is ringtrace installed "
		 "whole?)", file, dir, RT_BIN_TO_LIBDIR, dir);
	return -ENOENT;
}

int record_preload_add(struct record_opts *o, const char *list, char *err, size_t errlen)
{
	char copy[256];
	if (snprintf(copy, sizeof(copy), "%s", list) >= (int)sizeof(copy)) {
		snprintf(err, errlen, "--preload list too long");
		return -EINVAL;
	}
	char *save = NULL;
	for (char *name = strtok_r(copy, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
		size_t i = 0;
		while (i < sizeof(helpers) / sizeof(helpers[0]) && strcmp(helpers[i].name, name))
			i++;
		if (i == sizeof(helpers) / sizeof(helpers[0])) {
			snprintf(err, errlen, "unknown preload helper '%s' (libc, pthread, dl, func)",
				 name);
			return -EINVAL;
		}
		char path[PATH_MAX];
		int ret = find_helper(helpers[i].file, path, sizeof(path), err, errlen);
		if (ret < 0)
			return ret;
		/* LD_PRELOAD separates its entries with spaces and colons. */
		if (strpbrk(path, ": \t")) {
			snprintf(err, errlen, "%s: a space or colon in the path cannot go in "
				 "LD_PRELOAD", path);
			return -EINVAL;
		}
		if (strstr(o->preload, path))
			continue;
		size_t l = strlen(o->preload);
		if (snprintf(o->preload + l, sizeof(o->preload) - l, "%s%s", l ? ":" : "", path) >=
		    (int)(sizeof(o->preload) - l)) {
			snprintf(err, errlen, "--preload: paths too long");
			return -EINVAL;
		}
	}
	if (!o->preload[0]) {
		snprintf(err, errlen, "--preload needs a helper (libc, pthread, dl, func)");
		return -EINVAL;
	}
	return 0;
}

int record_preload_env(const struct record_opts *o)
{
	if (!o->preload[0])
		return 0;
	const char *user = getenv("LD_PRELOAD");
	char *v;
	if (asprintf(&v, "%s%s%s", user && *user ? user : "", user && *user ? ":" : "",
		     o->preload) < 0)
		return -ENOMEM;
	int ret = setenv("LD_PRELOAD", v, 1) < 0 ? -errno : 0;
	free(v);
	return ret;
}
