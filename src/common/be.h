/*
 * be.h - big-endian (network byte order) integers at any address: the
 * relay's CTF index entries (src/relay) and LTTng's live protocol frames
 * (src/live) are laid out with them. Pure functions, no alignment needed.
 */
#ifndef RT_COMMON_BE_H
#define RT_COMMON_BE_H

#include <endian.h>
#include <stdint.h>
#include <string.h>

static inline void rt_put_be32(uint8_t *p, uint32_t v)
{
	v = htobe32(v);
	memcpy(p, &v, 4);
}

static inline void rt_put_be64(uint8_t *p, uint64_t v)
{
	v = htobe64(v);
	memcpy(p, &v, 8);
}

static inline uint32_t rt_get_be32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return be32toh(v);
}

static inline uint64_t rt_get_be64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return be64toh(v);
}

#endif /* RT_COMMON_BE_H */
