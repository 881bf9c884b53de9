/*
 * ctl_save.c - `ringtrace save` and `ringtrace load`: session
 * configurations as text (docs/sessions.md, "Saved sessions").
 *
 * Format, one request per line:
 *   # comment                   (also blank lines)
 *   VERB key=value key=value... (VERB: create, enable-channel, add-context,
 *                                enable-event, enable-rotation, track,
 *                                untrack, add-trigger)
 * The kernel domain's lines carry domain=kernel (its channel, then its
 * rules: syscall=1, filter=EXPR), before user space's (whose rules carry
 * exclude, loglevel or loglevel-only, filter=EXPR).
 * Keys and values are those of the control requests (ctl_requests.c);
 * values are percent-encoded: a byte <= ' ', '%' or >= 0x7f is written
 * as %XX. Every line after `create name=S` carries session=S, but
 * add-trigger lines, which carry the words of the trigger (arg=WORD...,
 * --owner-uid first) and follow the sessions (`save -a` only).
 *
 * Load checks the whole text first (syntax, verbs, names, sessions that
 * exist already), then runs the lines in order; if one fails, the
 * sessions it created are destroyed and the error names the line.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../common/config_parse.h"
#include "../kernel/kernel.h"
#include "ctl.h"
#include "load_parse.h"

static void put_value(FILE *out, const char *key, const char *v)
{
	fprintf(out, " %s=", key);
	for (const unsigned char *p = (const unsigned char *)v; *p; p++) {
		if (*p <= ' ' || *p == '%' || *p >= 0x7f)
			fprintf(out, "%%%02X", *p);
		else
			fputc(*p, out);
	}
}

void ctl_save_word(const char *word, void *out)
{
	put_value(out, "arg", word);
}

static void put_u64(FILE *out, const char *key, uint64_t v)
{
	fprintf(out, " %s=%llu", key, (unsigned long long)v);
}

/* Write s in the save format (top of this file). */
static void ctl_save_session(FILE *out, const struct rtd_session *s)
{
	fprintf(out, "create");
	put_value(out, "name", s->name);
	/* A session streamed to a relay: where, as create takes it. */
	put_value(out, s->net ? "set-url" : "output", s->output);
	if (s->net && s->live_delay_us)
		put_u64(out, "live", s->live_delay_us);
	if (s->snapshot)
		fprintf(out, " snapshot=1");
	if (s->shm_path[0])
		put_value(out, "shm-path", s->shm_path);
	fputc('\n', out);
	for (const struct rtd_channel *c = s->kchannels; c; c = c->next) {
		fprintf(out, "enable-channel domain=kernel");
		put_value(out, "session", s->name);
		put_value(out, "channel", c->name);
		put_u64(out, "overwrite", c->overwrite);
		put_u64(out, "subbuf-size", c->subbuf_size);
		put_u64(out, "num-subbuf", c->num_subbuf);
		put_u64(out, "read-timer-us", (uint64_t)c->read_timer_ms * 1000);
		fputc('\n', out);
		for (unsigned bit = 1; rtk_context_name(bit); bit <<= 1) {
			if (!(c->kcontexts & bit))
				continue;
			fprintf(out, "add-context domain=kernel");
			put_value(out, "session", s->name);
			put_value(out, "channel", c->name);
			put_value(out, "type", rtk_context_name(bit));
			fputc('\n', out);
		}
		for (const struct rtd_rule *r = c->rules; r; r = r->next) {
			fprintf(out, "enable-event domain=kernel");
			put_value(out, "session", s->name);
			put_value(out, "channel", c->name);
			put_value(out, "pattern", r->pattern);
			if (r->syscall)
				fprintf(out, " syscall=1");
			if (r->probe)
				put_value(out, "userspace-probe", r->probe);
			if (r->filter)
				put_value(out, "filter", r->filter);
			if (!r->enabled)
				fprintf(out, " enabled=0");
			fputc('\n', out);
		}
	}
	for (const struct rtd_channel *c = s->channels; c; c = c->next) {
		fprintf(out, "enable-channel");
		put_value(out, "session", s->name);
		put_value(out, "channel", c->name);
		put_u64(out, "overwrite", c->overwrite);
		put_u64(out, "subbuf-size", c->subbuf_size);
		put_u64(out, "num-subbuf", c->num_subbuf);
		put_u64(out, "switch-timer-us", (uint64_t)c->switch_timer_ms * 1000);
		put_u64(out, "read-timer-us", (uint64_t)c->read_timer_ms * 1000);
		if (c->tracefile_size)
			put_u64(out, "tracefile-size", c->tracefile_size);
		if (c->tracefile_count)
			put_u64(out, "tracefile-count", c->tracefile_count);
		fprintf(out, " buffers=%s\n", c->buffers == RTD_BUFFERS_PER_PID ? "pid" : "uid");
		for (uint32_t i = 0; i < c->nr_contexts; i++) {
			fprintf(out, "add-context");
			put_value(out, "session", s->name);
			put_value(out, "channel", c->name);
			put_value(out, "type", rt_context_name(c->contexts[i]));
			fputc('\n', out);
		}
		for (const struct rtd_rule *r = c->rules; r; r = r->next) {
			fprintf(out, "enable-event");
			put_value(out, "session", s->name);
			put_value(out, "channel", c->name);
			put_value(out, "pattern", r->pattern);
			for (size_t i = 0; i < r->nr_excludes; i++)
				put_value(out, "exclude", r->excludes[i]);
			if (r->loglevel_type == RT_LEVEL_RANGE)
				fprintf(out, " loglevel=%d", r->loglevel);
			else if (r->loglevel_type == RT_LEVEL_ONLY)
				fprintf(out, " loglevel-only=%d", r->loglevel);
			if (r->filter)
				put_value(out, "filter", r->filter);
			if (!r->enabled)
				fprintf(out, " enabled=0");
			fputc('\n', out);
		}
	}
	if (s->rot.timer_us || s->rot.size) {
		fprintf(out, "enable-rotation");
		put_value(out, "session", s->name);
		if (s->rot.timer_us)
			put_u64(out, "timer-us", s->rot.timer_us);
		if (s->rot.size)
			put_u64(out, "size", s->rot.size);
		fputc('\n', out);
	}
	if (!s->track_all) {
		if (!s->nr_tracked) {
			fprintf(out, "untrack");
			put_value(out, "session", s->name);
			fprintf(out, " all=1\n");
		} else {
			fprintf(out, "track");
			put_value(out, "session", s->name);
			for (size_t i = 0; i < s->nr_tracked; i++)
				fprintf(out, " pid=%d", (int)s->tracked[i]);
			fputc('\n', out);
		}
	}
}

/* save: session | all=1. The text goes to the reply's "out". */
int ctl_save(const struct ctl_req *r, FILE *out, struct rtp_kv *reply, char *err, size_t errlen)
{
	(void)reply;
	const char *all = ctl_get(r, "all");
	fprintf(out, "# ringtrace sessions v1\n");
	if (all && !strcmp(all, "1")) {
		for (const struct rtd_session *s = rtd_sessions; s; s = s->next)
			if (!s->flat)
				ctl_save_session(out, s);
		ctl_triggers_save(out, r->uid);
		return 0;
	}
	struct rtd_session *s = ctl_session_of(r, err, errlen);
	if (!s)
		return -ENOENT;
	ctl_save_session(out, s);
	return 0;
}

/* load: text, file (for messages), override-name, force=1 (create's). */
int ctl_load(const struct ctl_req *r, FILE *out, struct rtp_kv *reply, char *err, size_t errlen)
{
	const char *text = ctl_get(r, "text"), *file = ctl_get(r, "file");
	const char *override = ctl_get(r, "override-name"), *force = ctl_get(r, "force");
	if (!file)
		file = "(text)";
	if (!text) {
		snprintf(err, errlen, "load without text");
		return -EINVAL;
	}
	char *copy = strdup(text);
	if (!copy) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	struct load_line *lines = NULL;
	size_t n = 0;
	int ret = load_parse(copy, file, override, &lines, &n, err, errlen);
	if (ret < 0)
		goto out_copy;
	/* Run; remember the sessions created for the rollback. */
	struct rtd_session **made = calloc(n, sizeof(*made));
	struct { uid_t owner; char name[RT_TRIGGER_NAME_MAX]; } *trig = calloc(n, sizeof(*trig));
	size_t nmade = 0, ntrig = 0;
	if (!made || !trig) {
		snprintf(err, errlen, "out of memory");
		ret = -ENOMEM;
		goto out_made;
	}
	struct rtd_session *old_current = model_current;
	for (size_t i = 0; i < n; i++) {
		struct ctl_req sub = { .p = lines[i].kv.data, .len = lines[i].kv.len,
				       .uid = r->uid };
		struct rtp_kv scratch = { 0 };
		char lerr[CTL_ERRLEN] = "";
		/* --force applies to the outputs of the sessions created. */
		if (force && !strcmp(force, "1") && !lines[i].kv.err &&
		    !strcmp(ctl_get(&sub, "cmd"), "create")) {
			rtp_kv_add(&lines[i].kv, "force", "1");
			sub = (struct ctl_req){ .p = lines[i].kv.data, .len = lines[i].kv.len,
						.uid = r->uid };
		}
		if (lines[i].kv.err) {
			ret = lines[i].kv.err;
			snprintf(lerr, sizeof(lerr), "line too long");
		} else {
			ret = ctl_handle(&sub, &scratch, lerr, sizeof(lerr));
		}
		const char *created = ret == 0 && !strcmp(ctl_get(&sub, "cmd"), "create") ?
			rtp_kv_get(scratch.data, scratch.len, "session") : NULL;
		if (created)
			made[nmade++] = model_session_find(created);
		const char *tname = ret == 0 && !strcmp(ctl_get(&sub, "cmd"), "add-trigger") ?
			rtp_kv_get(scratch.data, scratch.len, "trigger") : NULL;
		const char *towner = rtp_kv_get(scratch.data, scratch.len, "owner");
		if (tname && towner) {
			trig[ntrig].owner = (uid_t)strtoul(towner, NULL, 10);
			snprintf(trig[ntrig++].name, RT_TRIGGER_NAME_MAX, "%s", tname);
		}
		rtp_kv_free(&scratch);
		if (ret < 0) {
			snprintf(err, errlen, "%s:%u: %s", file, lines[i].lineno, lerr);
			while (nmade > 0) {
				struct rtd_session *s = made[--nmade];
				dp_session_destroy(s);
				ctl_cluster_forget(s);
				dp_relay_close(s);
				model_session_free(s);
			}
			while (ntrig > 0) {
				ntrig--;
				ctl_trigger_remove(trig[ntrig].owner, trig[ntrig].name);
			}
			model_current = old_current;
			goto out_made;
		}
	}
	for (size_t i = 0; i < nmade; i++) {
		fprintf(out, "Session %s loaded.\n", made[i]->name);
		ctl_rules_changed(made[i], reply);
	}
	for (size_t i = 0; i < ntrig; i++)
		fprintf(out, "Trigger %s loaded.\n", trig[i].name);
	ret = 0;
out_made:
	free(made);
	free(trig);
	load_lines_free(lines, n);
out_copy:
	free(copy);
	return ret;
}
