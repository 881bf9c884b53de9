/*
 * trace_dir.c - stream files and metadata of an embedded-mode trace.
 */
#define _GNU_SOURCE
#include "trace_dir.h"

#include "../fs/fs_util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config_parse.h"

extern char *program_invocation_short_name;

int rt_trace_dir_create_file(const char *dir, const char *name)
{
	return rt_file_create(dir, name, false, NULL, 0);
}

int rt_trace_dir_write_metadata(const char *dir, const struct rt_channel *ch,
				const struct rt_clock_desc *clk,
				uint64_t *generation)
{
	char host[256] = "unknown";
	gethostname(host, sizeof(host) - 1);
	const char *slash = strrchr(dir, '/');

	struct ctf_trace_info t = {
		.hostname = host,
		.procname = program_invocation_short_name,
		.vpid = getpid(),
		.trace_name = slash ? slash + 1 : dir,
		.tracer_version = RINGTRACE_VERSION,
		.clock = {
			.name = clk->name,
			.description = clk->description,
			.freq = clk->freq,
			.offset_s = clk->offset_s,
			.offset = clk->offset,
			.precision = clk->precision,
		},
	};
	memcpy(t.uuid, ch->stream.uuid, sizeof(t.uuid));
	struct rt_field_desc ctx[RTD_CTX_COUNT];
	for (uint32_t i = 0; i < ch->nr_ctx; i++)
		ctx[i] = (struct rt_field_desc){ .name = rt_context_name(ch->ctx[i]),
						 .type = rt_context_type(ch->ctx[i]) };
	struct ctf_stream_class sc = { .id = ch->stream.stream_id, .name = ch->name,
				       .nr_contexts = ch->nr_ctx, .contexts = ctx };

	struct ctf_buf b = { 0 };
	struct ctf_event_class *ev = NULL;
	int ret;

	pthread_mutex_lock(&rt_registry_lock);
	/* Acquire: pairs with the registry's release increment. */
	*generation = __atomic_load_n(&rt_registry_generation, __ATOMIC_ACQUIRE);
	struct rt_event_class **cls;
	size_t n = rt_registry_classes(&cls);
	ev = calloc(n ? n : 1, sizeof(*ev));
	if (!ev) {
		pthread_mutex_unlock(&rt_registry_lock);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		ev[i] = (struct ctf_event_class){
			.id = cls[i]->id,
			.stream_id = sc.id,
			.provider = cls[i]->provider,
			.name = cls[i]->name,
			.loglevel = cls[i]->loglevel,
			.nr_fields = cls[i]->nr_fields,
			.fields = cls[i]->fields,
		};
	}
	ret = ctf_metadata_build(&b, &t, &sc, 1, ev, n);
	pthread_mutex_unlock(&rt_registry_lock);
	if (!ret)
		ret = rt_file_write_atomic(dir, "metadata", b.data, b.len, false, NULL, 0);
	ctf_buf_free(&b);
	free(ev);
	return ret;
}
