/*
 * ctl_commands.c - the session commands (create, enable-event, ...): argv
 * parsed with the table of ctl_table.c into a control request, sent to
 * ringtraced, and the reply printed. save/load read and write their files
 * here; everything else happens in the daemon.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/array.h"
#include "../common/fs_util.h"
#include "../common/config_parse.h"
#include "../proto/proto.h"
#include "cli.h"
#include "ctl_table.h"

void ctl_print_help(const struct ctl_cmd *c, FILE *f)
{
	fprintf(f, "NAME\n    ringtrace %s - %s\n\nSYNOPSIS\n    %s\n\nDESCRIPTION\n",
		c->name, c->summary, c->synopsis);
	for (const char *p = c->description; *p;) {
		const char *e = strchrnul(p, '\n');
		fprintf(f, "    %.*s\n", (int)(e - p), p);
		p = *e ? e + 1 : e;
	}
	fprintf(f, "\nOPTIONS\n");
	for (const struct ctl_opt *o = c->opts; o < c->opts + CTL_MAX_OPTS && o->lng; o++) {
		char left[64], sh[8] = "    ";
		if (o->shrt)
			snprintf(sh, sizeof(sh), "-%c, ", o->shrt);
		snprintf(left, sizeof(left), "%s--%s%s%s", sh, o->lng,
			 o->metavar && o->arg != ARG_OPTNUM ? " " : "", o->metavar ? o->metavar : "");
		fprintf(f, "    %-30s %s\n", left, o->help);
	}
	fprintf(f, "    %-30s %s\n", "-h, --help", "this help");
	fprintf(f, "\nThe daemon keeps a current session: the last created, loaded or set\n"
		"with 'ringtrace set-session'. Exit status: 0 success, 1 failure, 2 bad usage\n"
		"or invalid value. See docs/sessions.md.\n");
}

static int bad_value(const char *what, const char *msg)
{
	cli_usage_error("%s: %s", what, msg);
	return -EINVAL;
}

/* Add one option or positional value to the request. */
static int add_arg(enum ctl_arg arg, const char *key, const char *v,
		   struct rtp_kv *kv)
{
	char err[RT_ERRLEN], buf[PATH_MAX * 2];
	switch (arg) {
	case ARG_STR:
		if (!*v)
			return bad_value(key, "empty value");
		rtp_kv_add(kv, key, v);
		return 0;
	case ARG_PATH:
		if (v[0] == '/' || !getcwd(buf, PATH_MAX)) {
			rtp_kv_add(kv, key, v);
		} else {
			size_t l = strlen(buf);
			snprintf(buf + l, sizeof(buf) - l, "/%s", v);
			rtp_kv_add(kv, key, buf);
		}
		return 0;
	case ARG_SIZE: {
		uint64_t n;
		if (rt_parse_size(v, &n, err) < 0)
			return bad_value(key, err);
		rtp_kv_addf(kv, key, "%llu", (unsigned long long)n);
		return 0;
	}
	case ARG_NUM: {
		char *end;
		errno = 0;
		unsigned long long n = strtoull(v, &end, 10);
		if (!*v || *v == '-' || *end || errno) {
			snprintf(err, sizeof(err), "'%s' is not a number", v);
			return bad_value(key, err);
		}
		rtp_kv_addf(kv, key, "%llu", n);
		return 0;
	}
	case ARG_USEC: {
		uint64_t us;
		if (rt_parse_duration_us(v, &us, err) < 0)
			return bad_value(key, err);
		rtp_kv_addf(kv, key, "%llu", (unsigned long long)us);
		return 0;
	}
	case ARG_LOGLEVEL: {
		int32_t l;
		if (rt_parse_loglevel(v, &l, err) < 0)
			return bad_value(key, err);
		rtp_kv_addf(kv, key, "%d", (int)l);
		return 0;
	}
	case ARG_SET:
	case ARG_LOCAL:
	default:
		return 0;
	}
}

static int read_file(const char *path, char **text)
{
	FILE *f = fopen(path, "re");
	if (!f) {
		int e = errno;
		cli_error("cannot open %s: %s", path, strerror(e));
		return -e;
	}
	char *buf = NULL;
	size_t len = 0, cap = 0;
	int ret = 0;
	for (;;) {
		if (len + 4096 + 1 > RTP_MAX_PAYLOAD / 2) {
			cli_error("%s is too large", path);
			ret = -EFBIG;
			break;
		}
		if (RT_ARRAY_GROW(buf, cap, len + 4096 + 1, 8192) < 0) {
			ret = -ENOMEM;
			break;
		}
		size_t n = fread(buf + len, 1, 4096, f);
		len += n;
		if (n < 4096)
			break;
	}
	if (!ret && ferror(f)) {
		cli_error("cannot read %s", path);
		ret = -EIO;
	}
	fclose(f);
	if (!ret && memchr(buf, '\0', len)) {
		cli_error("%s is not a text file", path);
		ret = -EINVAL;
	}
	if (ret) {
		free(buf);
		return ret;
	}
	buf[len] = '\0';
	*text = buf;
	return 0;
}

/* Print the reply's text (or write it to `file`). */
static int print_out(const struct rtp_msg *reply, const char *file)
{
	const char *out = rtp_kv_get(reply->payload, reply->length, "out");
	if (!out)
		return 0;
	if (!file) {
		fputs(out, stdout);
		return 0;
	}
	/* Beside the target, renamed over it once complete (fs_util.h). */
	struct rt_out of;
	char err[PATH_MAX + 256];
	if (rt_out_open(&of, file, err, sizeof(err)) < 0) {
		cli_error("%s", err);
		return CLI_EXIT_FAILURE;
	}
	if (fputs(out, of.f) < 0) {
		cli_error("cannot write %s: %s", file, strerror(errno));
		rt_out_abort(&of);
		return CLI_EXIT_FAILURE;
	}
	if (rt_out_commit(&of, err, sizeof(err)) < 0) {
		cli_error("%s", err);
		return CLI_EXIT_FAILURE;
	}
	printf("Saved to %s\n", file);
	return 0;
}

static int run(const struct ctl_cmd *c, int argc, char **argv)
{
	struct option lopts[CTL_MAX_OPTS + 2];
	char shorts[CTL_MAX_OPTS * 2 + 4] = ":h";
	size_t n = 0, sl = strlen(shorts);
	for (const struct ctl_opt *o = c->opts; o < c->opts + CTL_MAX_OPTS && o->lng; o++, n++) {
		bool val = o->metavar != NULL;
		lopts[n] = (struct option){ o->lng, o->arg == ARG_OPTNUM ? optional_argument
					    : val ? required_argument : no_argument, NULL,
					    256 + (int)n };
		if (o->shrt) {
			shorts[sl++] = o->shrt;
			if (val)
				shorts[sl++] = ':';
		}
	}
	shorts[sl] = '\0';
	lopts[n++] = (struct option){ "help", no_argument, NULL, 'h' };
	lopts[n] = (struct option){ NULL, 0, NULL, 0 };

	struct rtp_kv kv = { 0 };
	const char *local_out = NULL;
	int ret = CLI_EXIT_USAGE;
	rtp_kv_add(&kv, "cmd", strcmp(c->name, "snapshot") ? c->name : "snapshot-record");
	optind = 1;
	opterr = 0;
	int ch;
	while ((ch = getopt_long(argc, argv, shorts, lopts, NULL)) != -1) {
		const struct ctl_opt *o = NULL;
		if (ch == 'h') {
			ctl_print_help(c, stdout);
			ret = 0;
			goto out;
		}
		if (ch == '?' || ch == ':') {
			if (optopt && optopt < 256)
				cli_usage_error("option '-%c' %s", optopt,
						ch == ':' ? "needs a value" : "is unknown");
			else
				cli_usage_error("option '%s' %s", argv[optind - 1],
						ch == ':' ? "needs a value" : "is unknown");
			goto out;
		}
		if (ch >= 256)
			o = &c->opts[ch - 256];
		for (size_t i = 0; !o && i < CTL_MAX_OPTS && c->opts[i].lng; i++)
			if (c->opts[i].shrt == ch)
				o = &c->opts[i];
		if (!o)
			goto out;
		if (o->arg == ARG_SET || (o->arg == ARG_OPTNUM && !optarg))
			rtp_kv_add(&kv, o->key, o->value);
		else if (o->arg == ARG_OPTNUM && add_arg(ARG_NUM, o->key, optarg, &kv) < 0)
			goto out;
		else if (o->arg == ARG_OPTNUM)
			continue;
		else if (o->arg == ARG_LOCAL)
			local_out = optarg;
		else if (add_arg(o->arg, o->key, optarg, &kv) < 0)
			goto out;
	}
	int npos = argc - optind;
	if (!strcmp(c->name, "list") && (rtp_kv_get(kv.data, kv.len, "kernel") ||
					  rtp_kv_get(kv.data, kv.len, "syscall"))) {
		if (!rtp_kv_get(kv.data, kv.len, "kernel"))
			cli_usage_error("--syscall goes with -k: ringtrace list -k --syscall");
		else if (rtp_kv_get(kv.data, kv.len, "events") || npos)
			cli_usage_error("-k takes no session and no -u: %s", c->synopsis);
		else
			ret = cli_list_kernel(rtp_kv_get(kv.data, kv.len, "syscall") != NULL);
		goto out;
	}
	if (npos < c->pos_min || npos > c->pos_max) {
		cli_usage_error("%s: %s", npos < c->pos_min ? "missing argument" : "too many arguments",
				c->synopsis);
		goto out;
	}
	char *text = NULL;
	for (int i = optind; i < argc; i++) {
		if (c->pos_arg == ARG_LOCAL) {
			if (read_file(argv[i], &text) < 0) {
				ret = CLI_EXIT_FAILURE;
				goto out;
			}
			rtp_kv_add(&kv, "file", argv[i]);
			rtp_kv_add(&kv, "text", text);
			free(text);
		} else if (add_arg(c->pos_arg, c->pos_key, argv[i], &kv) < 0) {
			goto out;
		}
	}
	struct rtp_msg reply;
	ret = cli_ctl_request(&kv, !c->read_only, c->timeout_ms, &reply);
	if (ret == 0) {
		ret = print_out(&reply, local_out);
		rtp_msg_free(&reply);
	}
out:
	rtp_kv_free(&kv);
	return ret;
}

int cmd_ctl(int argc, char **argv)
{
	for (unsigned i = 0; i < ctl_nr_cmds; i++) {
		const struct ctl_cmd *c = &ctl_cmds[i];
		if (strcmp(argv[0], c->name))
			continue;
		if (!strcmp(c->name, "add-trigger"))
			return ctl_run_add_trigger(c, argc, argv);
		if (!strcmp(c->name, "notifications"))
			return ctl_run_notifications(c, argc, argv);
		if (strcmp(c->name, "snapshot"))
			return run(c, argc, argv);
		/* `snapshot record ...`: the action is a word of its own. */
		if (argc >= 2 && !strcmp(argv[1], "record"))
			return run(c, argc - 1, argv + 1);
		if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
			ctl_print_help(c, stdout);
			return 0;
		}
		cli_usage_error("the only action is 'record': %s", c->synopsis);
		return CLI_EXIT_USAGE;
	}
	cli_usage_error("unknown command '%s'", argv[0]);
	return CLI_EXIT_USAGE;
}
