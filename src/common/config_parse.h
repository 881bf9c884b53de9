/*
 * config_parse.h - parsing of the tracing options, shared by the library
 * (which reads them from the environment) and the `ringtrace` command
 * (which checks them before starting the program).
 *
 * Every function returns 0 or -EINVAL and writes a one-line reason to
 * `err` (size RT_ERRLEN) on failure. Pure; callable from anywhere.
 */
#ifndef RINGTRACE_CONFIG_PARSE_H
#define RINGTRACE_CONFIG_PARSE_H

#include <stdbool.h>
#include <stdint.h>

#define RT_ERRLEN 160

/* Sizes accept k/K, m/M, g/G suffixes (powers of 1024). */
int rt_parse_size(const char *s, uint64_t *out, char *err);
int rt_parse_u32(const char *s, uint32_t *out, char *err);
/* A duration in microseconds: a number with an optional unit, us (the
 * default), ms, s, m or h (LTTng's --timer). */
int rt_parse_duration_us(const char *s, uint64_t *out, char *err);
int rt_parse_bool(const char *s, bool *out, char *err);
/* A log level name (EMERG, ..., DEBUG, with or without a TRACE_ or
 * RT_LOGLEVEL_ prefix, any case) or its number 0-14. */
int rt_parse_loglevel(const char *s, int32_t *out, char *err);
/* Sub-buffer geometry: power-of-two size >= 4 KiB, count >= 2. */
int rt_check_subbuf(uint64_t size, uint32_t num, char *err);
const char *rt_loglevel_name(int32_t level);

/* A comma-separated list of context names (context.h: "vtid,procname";
 * "" or "none": no context) into out[] (RT_CTX_COUNT entries), *nr set.
 * Unknown or repeated names are errors. */
int rt_parse_contexts(const char *s, uint8_t *out, uint32_t *nr, char *err);

#endif /* RINGTRACE_CONFIG_PARSE_H */
