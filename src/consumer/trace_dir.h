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
 * fork child handler for rt_trace_dir_claim; between processes, the
 * directory's flock.
 */
#ifndef RINGTRACE_TRACE_DIR_H
#define RINGTRACE_TRACE_DIR_H

#include "../lib/rt_internal.h"

/* Create a new stream file in dir (fs_util.h: the directory checked, the
 * file created O_EXCL without following symbolic links); returns an fd
 * or -errno. */
RT_HIDDEN int rt_trace_dir_create_file(const char *dir, const char *name);

/* Claim the first free slot of first .. first + tries - 1: creates
 * DIR/.proc-K exclusively. Returns its fd (this process's fragment) with
 * *slot = K, or -errno (-ENOSPC: all taken). */
RT_HIDDEN int rt_trace_dir_claim(const char *dir, uint32_t first, uint32_t tries,
				 uint32_t *slot);

/* Write this process's declarations (the channel's stream class and
 * every registered event class) to its fragment ch->fragment (made anew
 * if the program closed our descriptor), then the metadata from every
 * slot's fragment; `*generation` receives the registry generation it
 * describes. Returns 0 or -errno. */
RT_HIDDEN int rt_trace_dir_write_metadata(const char *dir, struct rt_channel *ch,
					  const struct rt_clock_desc *clk,
					  uint64_t *generation);

#endif /* RINGTRACE_TRACE_DIR_H */
