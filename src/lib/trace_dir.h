/*
 * trace_dir.h - the files of a trace directory written in embedded mode:
 * `metadata` (TSDL, rewritten atomically when events register and at the
 * end with the final clock calibration) and one stream file per channel
 * and CPU, `<channel>_<cpu>`.
 *
 * Concurrency: consumer thread only.
 */
#ifndef RINGTRACE_TRACE_DIR_H
#define RINGTRACE_TRACE_DIR_H

#include "rt_internal.h"

/* Create a new stream file in dir (fs_util.h: the directory checked, the
 * file created O_EXCL without following symbolic links); returns an fd
 * or -errno. */
RT_HIDDEN int rt_trace_dir_create_file(const char *dir, const char *name);

/* Write the metadata for the channel and every registered event class;
 * `*generation` receives the registry generation it describes.
 * Returns 0 or -errno. */
RT_HIDDEN int rt_trace_dir_write_metadata(const char *dir,
					  const struct rt_channel *ch,
					  const struct rt_clock_desc *clk,
					  uint64_t *generation);

#endif /* RINGTRACE_TRACE_DIR_H */
