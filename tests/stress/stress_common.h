/*
 * stress_common.h - what the stress producer writes and the checker
 * verifies: every event carries (thread, seq, sum). Even seqs are
 * stress:ev, with a variable-length byte payload whose content and length
 * derive from (thread, seq) (the library copies it); odd seqs are
 * stress:fixed, fixed-size fields only (the call site records it by
 * itself, ringtrace/internal/fast.h). sum is a checksum over all of it, so a torn
 * or misplaced event cannot pass.
 */
#ifndef RINGTRACE_STRESS_COMMON_H
#define RINGTRACE_STRESS_COMMON_H

#include <stddef.h>
#include <stdint.h>

/* Signal-handler events use thread ids from here up. */
#define STRESS_SIG_THREAD_BASE 1000u
#define STRESS_MAX_PAYLOAD 96u

static inline uint64_t stress_mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

static inline uint32_t stress_payload_len(uint32_t thread, uint64_t seq)
{
	return (uint32_t)(stress_mix(((uint64_t)thread << 40) ^ seq) % (STRESS_MAX_PAYLOAD + 1));
}

static inline void stress_payload(uint32_t thread, uint64_t seq, uint8_t *buf, uint32_t len)
{
	uint64_t x = stress_mix(((uint64_t)thread << 40) ^ seq ^ 0x5eed);
	for (uint32_t i = 0; i < len; i++) {
		if ((i & 7) == 0)
			x = stress_mix(x + i);
		buf[i] = (uint8_t)(x >> ((i & 7) * 8));
	}
}

static inline uint64_t stress_sum(uint32_t thread, uint64_t seq, const uint8_t *buf, uint32_t len)
{
	uint64_t h = stress_mix(((uint64_t)thread << 48) ^ seq ^ len);
	for (uint32_t i = 0; i < len; i++)
		h = stress_mix(h ^ buf[i]);
	return h;
}

/* Whether seq is recorded as stress:fixed (else stress:ev). */
static inline int stress_is_fixed(uint64_t seq)
{
	return (int)(seq & 1);
}

/* stress:fixed's checksum. */
static inline uint64_t stress_fixed_sum(uint32_t thread, uint64_t seq)
{
	return stress_mix(((uint64_t)thread << 48) ^ seq ^ 0xf1edULL);
}

#endif /* RINGTRACE_STRESS_COMMON_H */
