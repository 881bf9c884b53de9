/*
 * metadata.c - the one metadata builder (consumer.h): one stream class
 * per channel (id = its stream id) with the channel's contexts (the
 * context table's, then its explicit fields) as its stream event
 * context; the trace's event classes; env (hostname, domain "ust" or the
 * trace's, tracer "ringtrace", procname and vpid for a one-program
 * trace); the trace's clock. And the metadata of a trace
 * with one writer: written whole, then appended to.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/context.h"
#include "../common/fs_util.h"
#include "consumer.h"

/* The header (trace, env, clock): ctf_metadata_build without streams or
 * events. */
static int build_header(struct ctf_buf *out, const struct cons_trace_desc *t)
{
	char host[256] = "unknown";
	gethostname(host, sizeof(host) - 1);
	struct ctf_trace_info ti = {
		.domain = t->domain,
		.hostname = t->hostname ? t->hostname : host,
		.relay_clock = t->relay_clock,
		.relay_offset_ns = t->relay_offset_ns,
		.relay_error_ns = t->relay_error_ns,
		.procname = t->procname,
		.vpid = t->vpid,
		.trace_name = t->trace_name,
		.tracer_version = RINGTRACE_VERSION,
		.clock = t->clock,
	};
	memcpy(ti.uuid, t->uuid, sizeof(ti.uuid));
	if (!ti.clock.name) {
		ti.clock.name = "monotonic";
		ti.clock.freq = 1000000000ull;
	}
	if (!ti.clock.description)
		ti.clock.description = "";
	return ctf_metadata_build(out, &ti, NULL, 0, NULL, 0);
}

uint32_t cons_channel_contexts(const struct cons_channel_desc *ch, struct rt_field_desc *out)
{
	uint32_t n = 0;
	for (uint32_t k = 0; k < ch->nr_contexts && k < RT_CTX_COUNT; k++) {
		const char *name = rt_context_name(ch->contexts[k]);
		if (name)
			out[n++] = (struct rt_field_desc){ .name = name,
							   .type = rt_context_type(ch->contexts[k]) };
	}
	for (uint32_t k = 0; k < ch->nr_fields && k < CONS_MAX_FIELDS; k++)
		out[n++] = ch->fields[k];
	return n;
}

static int build_streams(struct ctf_buf *out, const struct cons_channel_desc *const *chans,
			 size_t nr)
{
	struct ctf_stream_class *sc = calloc(nr ? nr : 1, sizeof(*sc));
	struct rt_field_desc *ctx = calloc((nr ? nr : 1) * CONS_MAX_CONTEXTS, sizeof(*ctx));
	int ret = -ENOMEM;
	if (!sc || !ctx)
		goto out;
	for (size_t i = 0; i < nr; i++) {
		const struct cons_channel_desc *ch = chans[i];
		struct rt_field_desc *c = &ctx[i * CONS_MAX_CONTEXTS];
		uint32_t nc = cons_channel_contexts(ch, c);
		sc[i] = (struct ctf_stream_class){ .id = ch->stream_id, .name = ch->name,
						   .nr_contexts = nc, .contexts = c };
	}
	ret = ctf_metadata_streams(out, sc, nr);
out:
	free(ctx);
	free(sc);
	return ret;
}

int cons_metadata_build(struct ctf_buf *out, const struct cons_trace_desc *t,
			const struct cons_channel_desc *const *chans, size_t nr, unsigned parts,
			uint32_t from, uint32_t *nr_events, uint64_t *generation)
{
	int ret = 0;
	if (parts & CONS_META_HEADER)
		ret = build_header(out, t);
	if (!ret && (parts & CONS_META_STREAMS))
		ret = build_streams(out, chans, nr);
	if (!ret && (parts & CONS_META_EVENTS)) {
		struct ctf_event_class *ev = NULL;
		uint32_t n = 0;
		uint64_t gen = 0;
		ret = t->classes.copy(t->classes.arg, from, &ev, &n, &gen);
		if (!ret)
			ret = ctf_metadata_events(out, ev, n);
		free(ev);
		if (nr_events)
			*nr_events = n;
		if (generation)
			*generation = gen;
	}
	return ret ? ret : out->err;
}

int cons_metadata_update(struct cons_metadata_state *st, const struct cons_trace_desc *t,
			 const struct cons_channel_desc *const *chans, size_t nr, bool force)
{
	if (!force && st->written && t->classes.generation(t->classes.arg) == st->generation)
		return 0;
	struct ctf_buf b = { 0 };
	uint64_t gen;
	uint32_t n;
	int ret;
	if (!force && st->written && !st->torn) {
		/* The classes registered since the last write, appended. An
		 * append that fails may have written part of them: the next
		 * write replaces the file whole. */
		ret = cons_metadata_build(&b, t, chans, nr, CONS_META_EVENTS, st->nr_events, &n,
					  &gen);
		if (!ret && b.len && (ret = rt_file_append(t->dir, "metadata", b.data, b.len)))
			st->torn = true;
		if (!ret)
			st->nr_events += n;
	} else {
		ret = cons_metadata_build(&b, t, chans, nr, CONS_META_ALL, 0, &n, &gen);
		/* The first write must not replace another trace's metadata. */
		if (!ret)
			ret = rt_file_write_atomic(t->dir, "metadata", b.data, b.len, !st->written,
						   NULL, 0);
		if (!ret) {
			st->nr_events = n;
			st->torn = false;
		}
	}
	if (!ret) {
		st->generation = gen;
		st->written = true;
	}
	ctf_buf_free(&b);
	return ret;
}
