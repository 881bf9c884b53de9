/*
 * trace_dir.h - the files of a trace directory written in embedded mode:
 * `metadata` (TSDL, rewritten atomically when events register and at the
 * end with the final clock calibration) and one stream file per channel
 * and CPU, `<channel>_<cpu>`.
 *
 * Every traced process of a process tree writes into the same trace
 * (fork children and programs they exec, docs/recording.md): each claims
 * a slot K (the file `.proc-K`, created exclusively: 0 for the first
 * process, the pid or a number just above for the others), records with
 * stream class K in its own stream files (`channel0_CPU-K`), and
 * keeps its stream class's and event classes' declarations (TSDL) in
 * `.proc-K`. The metadata is one header (trace, env, clock) followed by
 * every slot's declarations in slot order, rewritten under an exclusive
 * flock of the directory by whichever process's declarations changed,
 * so the last rewrite describes every process's streams.
 *
 * Concurrency: the consumer thread only, or the session's start and
 * fork child handler for cons_trace_dir_claim; between processes, the
 * directory's flock.
 */
#ifndef RINGTRACE_TRACE_DIR_H
#define RINGTRACE_TRACE_DIR_H

#include <stdint.h>

#include "../common/owned_fd.h"
#include "consumer.h"

/* Claim the first free slot of first .. first + tries - 1: creates
 * DIR/.proc-K exclusively. Returns its fd (this process's fragment) with
 * *slot = K, or -errno (-ENOSPC: all taken). */
CONS_HIDDEN int cons_trace_dir_claim(const char *dir, uint32_t first, uint32_t tries,
				     uint32_t *slot);

/* Write this process's declarations (the channel's stream class and
 * every event class of the trace, cons_metadata_build) to its fragment
 * (slot's, *fragment; made anew if the program closed our descriptor),
 * then t->dir/metadata: the header and every slot's fragment;
 * `*generation` receives the classes' generation it describes (left as it
 * was when the write fails). Returns 0 or -errno. */
CONS_HIDDEN int cons_trace_dir_metadata(const struct cons_trace_desc *t,
					const struct cons_channel_desc *ch, uint32_t slot,
					struct rt_owned_fd *fragment, uint64_t *generation);

#endif /* RINGTRACE_TRACE_DIR_H */
