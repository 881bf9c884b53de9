/*
 * fuzz_app.c - the app protocol's decoders (src/proto/app_proto.c), both
 * directions: what the daemon decodes from a traced program (REGISTER
 * with its event list, EVENTS) and what a program decodes from a daemon
 * (REGISTER_REPLY, CHANNEL, ENABLE with the filters it then loads with
 * rtf_load, DISABLE_SESSION, TRIGGERS, SYNC, the empty ones). Input: first
 * byte selects the message, the rest is its payload.
 */
#include <stdlib.h>
#include <string.h>

#include "../../src/filter/filter.h"
#include "../../src/proto/app_proto.h"
#include "../../src/proto/proto.h"
#include "fuzz.h"

/* An event list: the count, then the records, then the end. */
static void event_list(struct rtp_app_cursor *c)
{
	uint32_t n;
	if (rtp_app_event_list_decode(c, &n) < 0)
		return;
	for (uint32_t i = 0; i < n; i++) {
		struct rtp_app_event_in e;
		if (rtp_app_event_decode(c, &e) < 0)
			return;
		FUZZ_CHECK(e.nr_fields <= RT_MAX_FIELDS && strlen(e.name) <= RTP_APP_STR_MAX);
		FUZZ_CHECK(rtp_app_identifier_ok(e.provider) && rtp_app_identifier_ok(e.name));
	}
	(void)rtp_app_end(c);
}

static void load_filter(const void *p, size_t len)
{
	struct rtf_program *prog = NULL;
	char err[128];
	if (rtf_load(p, len, &prog, err, sizeof(err)) == 0)
		rtf_free(prog);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size - 1 > RTP_MAX_PAYLOAD)
		return 0;
	/* The payload in a buffer of its own size (ASan sees overreads). */
	char *p = malloc(size);
	if (!p)
		return 0;
	memcpy(p, data + 1, size - 1);
	struct rtp_app_cursor c = rtp_app_cursor(p, (uint32_t)(size - 1));
	switch (data[0] % 10) {
	case 0: {
		struct rtp_app_register r;
		if (rtp_app_register_decode(&c, &r) == 0)
			event_list(&c);
		break;
	}
	case 1:
		event_list(&c);
		break;
	case 2: {
		enum rtp_app_clock clock;
		(void)rtp_app_register_reply_decode(&c, &clock);
		break;
	}
	case 3: {
		struct rtp_app_channel m;
		if (rtp_app_channel_decode(&c, &m) == 0)
			FUZZ_CHECK(m.nr_contexts <= RTP_APP_MAX_CONTEXTS);
		break;
	}
	case 4: {
		struct rtp_app_enable m;
		if (rtp_app_enable_decode(&c, &m) < 0)
			break;
		for (uint32_t i = 0; i < m.n; i++) {
			uint32_t index, id;
			rtp_app_enable_entry(&m, i, &index, &id);
			FUZZ_CHECK(index < RTP_APP_MAX_EVENTS && id <= RTP_APP_EVENT_ID_MAX);
		}
		for (uint32_t i = 0; i < m.nr_uses; i++) {
			struct rtp_app_enable_use u = rtp_app_enable_use_at(&m, i);
			FUZZ_CHECK(u.entry < m.n && u.filter < m.nr_filters);
		}
		for (uint32_t i = 0; i < m.nr_filters; i++)
			load_filter(m.filters[i].p, m.filters[i].len);
		break;
	}
	case 5: {
		uint64_t id;
		(void)rtp_app_disable_session_decode(&c, &id);
		break;
	}
	case 6: {
		uint32_t n;
		if (rtp_app_triggers_decode(&c, &n) < 0)
			break;
		for (uint32_t i = 0; i < n; i++) {
			struct rtp_app_trigger_in t;
			if (rtp_app_trigger_decode(&c, &t) < 0)
				break;
			for (uint32_t k = 0; k < t.nr_events; k++)
				(void)rtp_app_trigger_event(&t, k);
			if (t.filter_len)
				load_filter(t.filter, t.filter_len);
		}
		(void)rtp_app_end(&c);
		break;
	}
	case 7: {
		uint64_t cookie;
		(void)rtp_app_sync_decode(&c, &cookie);
		break;
	}
	default:
		(void)rtp_app_end(&c);
		break;
	}
	free(p);
	return 0;
}
