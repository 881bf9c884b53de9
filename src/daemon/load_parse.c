/*
 * load_parse.c - the parser of saved sessions (`ringtrace load`'s text,
 * which ctl_save.c writes): each line a directive and key=value words
 * with %XX escapes, into the control requests the daemon then runs
 * (ctl_save.c, ctl_load). Pure: no daemon state, so the fuzz harness
 * (tests/fuzz/fuzz_config.c) runs it as the daemon does.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/array.h"
#include "../common/hex.h"
#include "load_parse.h"

/* Decode %XX in place; false on a bad escape or an encoded NUL. */
static bool decode(char *v)
{
	char *w = v;
	for (char *p = v; *p; p++) {
		if (*p != '%') {
			*w++ = *p;
			continue;
		}
		int hi = rt_hex_digit((unsigned char)p[1]);
		int lo = hi < 0 ? -1 : rt_hex_digit((unsigned char)p[2]);
		if (lo < 0 || (hi | lo) == 0)
			return false;
		*w++ = (char)(hi * 16 + lo);
		p += 2;
	}
	*w = '\0';
	return true;
}

static const char *const load_verbs[] = {
	"create", "enable-channel", "add-context", "enable-event", "track", "untrack",
	"enable-rotation", "add-trigger",
};

/* Parse one non-empty line (modified in place) into ln->kv. */
static int parse_line(char *line, struct load_line *ln, const char *override,
		      const char *orig, char *err, size_t errlen)
{
	char *save = NULL;
	char *verb = strtok_r(line, " \t", &save);
	bool known = false;
	for (size_t i = 0; i < sizeof(load_verbs) / sizeof(load_verbs[0]); i++)
		known |= !strcmp(verb, load_verbs[i]);
	if (!known) {
		snprintf(err, errlen, "unknown directive '%.64s'", verb);
		return -EINVAL;
	}
	rtp_kv_add(&ln->kv, "cmd", verb);
	bool has_session = false;
	for (char *tok; (tok = strtok_r(NULL, " \t", &save)) != NULL;) {
		char *eq = strchr(tok, '=');
		if (!eq) {
			snprintf(err, errlen, "'%.64s' is not key=value", tok);
			return -EINVAL;
		}
		*eq = '\0';
		char *v = eq + 1;
		if (!decode(v)) {
			snprintf(err, errlen, "bad %%XX escape in the value of %.64s", tok);
			return -EINVAL;
		}
		bool is_name = !strcmp(verb, "create") ? !strcmp(tok, "name") : !strcmp(tok, "session");
		if (!strcmp(tok, "cmd") || (!strcmp(verb, "create") && !strcmp(tok, "flat"))) {
			snprintf(err, errlen, "key '%s' is not allowed here", tok);
			return -EINVAL;
		}
		if (is_name) {
			has_session = true;
			if (override && orig && !strcmp(v, orig))
				v = (char *)(uintptr_t)override;
		}
		rtp_kv_add(&ln->kv, tok, v);
		if (ln->kv.err) {
			snprintf(err, errlen, "bad key '%.64s'", tok);
			return -EINVAL;
		}
	}
	if (!has_session && strcmp(verb, "add-trigger")) {
		snprintf(err, errlen, "%s without %s=", verb, !strcmp(verb, "create") ? "name" : "session");
		return -EINVAL;
	}
	return 0;
}

/* The name of the single `create` of the text (for --override-name). */
static int single_session(const char *text, char *name, size_t len, char *err, size_t errlen)
{
	unsigned n = 0;
	for (const char *p = text; p && *p;) {
		const char *e = strchrnul(p, '\n');
		if (!strncmp(p, "create ", 7)) {
			const char *k = strstr(p, " name=");
			if (k && k < e) {
				k += 6;
				size_t l = strcspn(k, " \t\n");
				snprintf(name, len, "%.*s", (int)l, k);
				if (!decode(name))
					name[0] = '\0';
			}
			n++;
		}
		p = *e ? e + 1 : NULL;
	}
	if (n != 1) {
		snprintf(err, errlen, "--override-name needs a file with exactly one session (it "
			 "has %u)", n);
		return -EINVAL;
	}
	return 0;
}

void load_lines_free(struct load_line *l, size_t n)
{
	for (size_t i = 0; i < n; i++)
		rtp_kv_free(&l[i].kv);
	free(l);
}

int load_parse(char *text, const char *file, const char *override,
	       struct load_line **out, size_t *nout, char *err, size_t errlen)
{
	char orig[PATH_MAX] = "", lerr[512];
	if (override && single_session(text, orig, sizeof(orig), err, errlen) < 0)
		return -EINVAL;
	struct load_line *lines = NULL;
	size_t n = 0, cap = 0;
	unsigned lineno = 0;
	int ret = 0;
	for (char *p = text; p;) {
		char *e = strchr(p, '\n');
		if (e)
			*e = '\0';
		lineno++;
		char *s = p + strspn(p, " \t\r");
		s[strcspn(s, "\r")] = '\0';
		p = e ? e + 1 : NULL;
		if (!*s || *s == '#')
			continue;
		if (RT_ARRAY_GROW(lines, cap, n + 1, 8) < 0) {
			snprintf(err, errlen, "out of memory");
			ret = -ENOMEM;
			goto fail;
		}
		memset(&lines[n], 0, sizeof(lines[n]));
		lines[n].lineno = lineno;
		n++;
		ret = parse_line(s, &lines[n - 1], override, orig, lerr, sizeof(lerr));
		if (ret < 0) {
			snprintf(err, errlen, "%s:%u: %s", file, lineno, lerr);
			goto fail;
		}
	}
	if (!n) {
		snprintf(err, errlen, "%s: no session in the file", file);
		ret = -EINVAL;
		goto fail;
	}
	*out = lines;
	*nout = n;
	return 0;
fail:
	load_lines_free(lines, n);
	return ret;
}

