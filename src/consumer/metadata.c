/*
 * metadata.c - the metadata of a daemon trace: one stream class per
 * channel (id = channel id) with the channel's contexts as its stream
 * event context, every event class the app registry assigned in the
 * trace, env (hostname, domain "ust", tracer "ringtrace", and procname
 * and vpid for per-pid traces), the trace's clock.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/fs_util.h"
#include "../common/config_parse.h"
#include "consumer_internal.h"

/* The trace's event classes from `from` on, copied under its lock (their
 * names and fields stay valid as long as the trace: the registry only
 * appends), so that the text is built without holding it. *events is
 * malloc'ed; *nr the number copied. 0 or -ENOMEM. */
static int copy_classes(struct dp_trace *t, uint32_t from, struct ctf_event_class **events,
			uint32_t *nr, uint64_t *generation)
{
	pthread_mutex_lock(&t->lock);
	*generation = t->generation;
	uint32_t n = t->nr_events > from ? t->nr_events - from : 0;
	struct ctf_event_class *ev = calloc(n ? n : 1, sizeof(*ev));
	for (uint32_t i = 0; ev && i < n; i++) {
		const struct dp_event_class *e = &t->events[from + i];
		ev[i] = (struct ctf_event_class){
			.id = e->id, .stream_id = e->channel_id,
			.provider = e->provider, .name = e->name,
			.loglevel = e->loglevel, .nr_fields = e->nr_fields,
			.fields = e->fields,
		};
	}
	pthread_mutex_unlock(&t->lock);
	*events = ev;
	*nr = n;
	return ev ? 0 : -ENOMEM;
}

/* The whole metadata; *nr_events: the classes it describes. */
static int metadata_build(struct dp_trace *t, struct ctf_buf *out, uint64_t *generation,
			  uint32_t *nr_events)
{
	char host[256] = "unknown";
	gethostname(host, sizeof(host) - 1);
	struct ctf_trace_info ti = {
		.hostname = host,
		.procname = t->pid ? t->procname : NULL,
		.vpid = t->pid,
		.trace_name = t->session ? t->session->name : "ringtrace",
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

	int ret = -ENOMEM;
	uint32_t nr = t->nr_bufsets;
	struct ctf_stream_class *sc = calloc(nr ? nr : 1, sizeof(*sc));
	struct rt_field_desc *ctx = calloc((size_t)(nr ? nr : 1) * RT_CTX_COUNT, sizeof(*ctx));
	struct ctf_event_class *ev = NULL;
	size_t nsc = 0;
	if (!sc || !ctx)
		goto out_free;
	/* Channels are immutable once the session started (rtd.h): no lock
	 * needed for their name, id and contexts. */
	for (uint32_t i = 0; i < nr; i++) {
		const struct rtd_channel *ch = t->bufsets[i].channel;
		if (!ch)
			continue;
		struct rt_field_desc *c = &ctx[(size_t)i * RT_CTX_COUNT];
		uint32_t nc = 0;
		for (uint32_t k = 0; k < ch->nr_contexts && k < RT_CTX_COUNT; k++) {
			if ((unsigned)ch->contexts[k] >= RT_CTX_COUNT)
				continue;
			c[nc].name = rt_context_name(ch->contexts[k]);
			c[nc].type = rt_context_type(ch->contexts[k]);
			nc++;
		}
		sc[nsc++] = (struct ctf_stream_class){
			.id = ch->id, .name = ch->name, .nr_contexts = nc, .contexts = c,
		};
	}

	ret = copy_classes(t, 0, &ev, nr_events, generation);
	if (ret == 0)
		ret = ctf_metadata_build(out, &ti, sc, nsc, ev, *nr_events);
	free(ev);
out_free:
	free(ctx);
	free(sc);
	return ret;
}

int cons_metadata_build(struct dp_trace *t, struct ctf_buf *out, uint64_t *generation)
{
	uint32_t nr;
	return metadata_build(t, out, generation, &nr);
}

/* Append the classes added since the last write (ct->meta_events on). */
static int metadata_append(struct cons_trace *ct)
{
	struct ctf_event_class *ev;
	uint32_t nr;
	uint64_t gen;
	int ret = copy_classes(ct->t, ct->meta_events, &ev, &nr, &gen);
	struct ctf_buf b = { 0 };
	if (ret == 0)
		ret = ctf_metadata_events(&b, ev, nr);
	if (ret == 0 && b.len)
		ret = rt_file_append(ct->t->dir, "metadata", b.data, b.len);
	if (ret == 0) {
		ct->meta_generation = gen;
		ct->meta_events += nr;
	}
	ctf_buf_free(&b);
	free(ev);
	return ret;
}

int cons_metadata_update(struct cons_trace *ct, bool force)
{
	struct dp_trace *t = ct->t;
	if (!force && ct->meta_written) {
		pthread_mutex_lock(&t->lock);
		bool same = t->generation == ct->meta_generation;
		pthread_mutex_unlock(&t->lock);
		return same ? 0 : metadata_append(ct);
	}
	struct ctf_buf b = { 0 };
	uint64_t gen;
	uint32_t nr;
	int ret = metadata_build(t, &b, &gen, &nr);
	/* The first write must not replace another trace's metadata. */
	if (!ret)
		ret = rt_file_write_atomic(t->dir, "metadata", b.data, b.len, !ct->meta_written,
					   NULL, 0);
	if (!ret) {
		ct->meta_generation = gen;
		ct->meta_written = true;
		ct->meta_events = nr;
	}
	ctf_buf_free(&b);
	return ret;
}
