/*
 * config_parse.c - option parsing shared by the library and the command.
 */
#define _GNU_SOURCE
#include "config_parse.h"
#include "context.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <ringtrace/ringtrace_types.h>

#include "../ringbuffer/ringbuffer.h"

static const char *const levels[] = {
	"EMERG", "ALERT", "CRIT", "ERR", "WARNING", "NOTICE", "INFO",
	"DEBUG_SYSTEM", "DEBUG_PROGRAM", "DEBUG_PROCESS", "DEBUG_MODULE",
	"DEBUG_UNIT", "DEBUG_FUNCTION", "DEBUG_LINE", "DEBUG",
};

const char *rt_loglevel_name(int32_t level)
{
	if (level < 0 || level >= (int32_t)(sizeof(levels) / sizeof(levels[0])))
		return "UNKNOWN";
	return levels[level];
}

int rt_parse_size(const char *s, uint64_t *out, char *err)
{
	char *end;
	if (!s || !*s || !isdigit((unsigned char)*s))
		goto bad;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno)
		goto bad;
	unsigned shift = 0;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	default: break;
	}
	if (*end == 'i' && shift) /* KiB, MiB */
		end++;
	if ((*end == 'b' || *end == 'B') && shift)
		end++;
	if (*end || (shift && v > (~0ULL >> shift)))
		goto bad;
	*out = v << shift;
	return 0;
bad:
	snprintf(err, RT_ERRLEN, "'%s' is not a size (examples: 4096, 64k, 1M)",
		 s ? s : "");
	return -EINVAL;
}

int rt_parse_duration_us(const char *s, uint64_t *out, char *err)
{
	static const struct {
		const char *unit;
		uint64_t us;
	} units[] = { { "", 1 }, { "us", 1 }, { "ms", 1000 }, { "s", 1000000 },
		      { "m", 60000000 }, { "h", 3600000000ull } };
	char *end;
	if (!s || !isdigit((unsigned char)*s))
		goto bad;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno)
		goto bad;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(end, units[i].unit))
			continue;
		if (v > UINT64_MAX / units[i].us)
			goto bad;
		*out = v * units[i].us;
		return 0;
	}
bad:
	snprintf(err, RT_ERRLEN, "'%s' is not a duration (examples: 500000, 500ms, 10s, 5m, 1h)",
		 s ? s : "");
	return -EINVAL;
}

int rt_parse_u32(const char *s, uint32_t *out, char *err)
{
	char *end;
	if (!s || !*s || !isdigit((unsigned char)*s))
		goto bad;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (errno || *end || v > 0xffffffffUL)
		goto bad;
	*out = (uint32_t)v;
	return 0;
bad:
	snprintf(err, RT_ERRLEN, "'%s' is not a number from 0 to 4294967295",
		 s ? s : "");
	return -EINVAL;
}

int rt_parse_bool(const char *s, bool *out, char *err)
{
	if (s && (!strcmp(s, "1") || !strcasecmp(s, "yes") || !strcasecmp(s, "true"))) {
		*out = true;
		return 0;
	}
	if (s && (!strcmp(s, "0") || !strcasecmp(s, "no") || !strcasecmp(s, "false"))) {
		*out = false;
		return 0;
	}
	snprintf(err, RT_ERRLEN, "'%s' is not a boolean (1/0, yes/no)", s ? s : "");
	return -EINVAL;
}

int rt_parse_loglevel(const char *s, int32_t *out, char *err)
{
	uint32_t n;
	char dummy[RT_ERRLEN];
	if (s && rt_parse_u32(s, &n, dummy) == 0 && n < 15) {
		*out = (int32_t)n;
		return 0;
	}
	const char *name = s ? s : "";
	if (!strncasecmp(name, "RT_LOGLEVEL_", 12))
		name += 12;
	else if (!strncasecmp(name, "TRACE_", 6))
		name += 6;
	for (int32_t i = 0; i < 15; i++) {
		if (!strcasecmp(name, levels[i])) {
			*out = i;
			return 0;
		}
	}
	snprintf(err, RT_ERRLEN,
		 "'%s' is not a log level (EMERG ALERT CRIT ERR WARNING NOTICE INFO "
		 "DEBUG_SYSTEM ... DEBUG_LINE DEBUG, or 0-14)", s ? s : "");
	return -EINVAL;
}

int rt_check_subbuf(uint64_t size, uint32_t num, char *err)
{
	if (size < RB_MIN_SUBBUF_SIZE || size > RB_MAX_SUBBUF_SIZE || (size & (size - 1))) {
		snprintf(err, RT_ERRLEN,
			 "sub-buffer size %llu must be a power of two from 4096 to 1G",
			 (unsigned long long)size);
		return -EINVAL;
	}
	if (num < 2 || num > RB_MAX_NUM_SUBBUF || (num & (num - 1))) {
		snprintf(err, RT_ERRLEN,
			 "number of sub-buffers %u must be a power of two from 2 to %u",
			 num, RB_MAX_NUM_SUBBUF);
		return -EINVAL;
	}
	return 0;
}

int rt_parse_contexts(const char *s, uint8_t *out, uint32_t *nr, char *err)
{
	*nr = 0;
	if (!strcmp(s, "none"))
		return 0;
	while (*s) {
		const char *comma = strchr(s, ',');
		size_t len = comma ? (size_t)(comma - s) : strlen(s);
		char name[32];
		if (len >= sizeof(name)) {
			snprintf(err, RT_ERRLEN, "unknown context '%.*s'", (int)len, s);
			return -EINVAL;
		}
		memcpy(name, s, len);
		name[len] = '\0';
		int c = rt_context_by_name(name);
		if (c < 0) {
			snprintf(err, RT_ERRLEN, "unknown context '%s' (%s)", name,
				 rt_context_names);
			return -EINVAL;
		}
		for (uint32_t i = 0; i < *nr; i++)
			if (out[i] == c) {
				snprintf(err, RT_ERRLEN, "context '%s' given twice", name);
				return -EINVAL;
			}
		out[(*nr)++] = (uint8_t)c;
		s += len + (comma != NULL);
	}
	return 0;
}
