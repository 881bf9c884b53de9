/*
 * analysis_internal.h - helpers shared by the writers of src/analysis
 * (hidden symbols, not part of the module's interface).
 */
#ifndef RINGTRACE_ANALYSIS_INTERNAL_H
#define RINGTRACE_ANALYSIS_INTERNAL_H

#include "analysis.h"

/* Indexes of the names with events, most frequent first (ties: name
 * order); *nr gets their number. NULL if out of memory. Caller frees. */
uint32_t *ra_names_by_count(const uint64_t *counts, uint32_t nr_names, uint32_t *nr);
/* Peak bucket of name `n`. */
uint32_t ra_peak_bucket(const struct ra_stats *s, uint32_t n);

/* The first slen bytes of s (at most len - 1) as printable text in out
 * (len >= 1): controls, invalid UTF-8 and a character cut at the end
 * become '?'. Names from untrusted traces go to terminals and tables. */
void ra_printable(const char *s, size_t slen, char *out, size_t len);

#endif /* RINGTRACE_ANALYSIS_INTERNAL_H */
