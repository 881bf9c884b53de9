/*
 * reader_open.c - find the traces under directories (every directory
 * holding a `metadata` file, recursively), read their metadata (plain
 * text or packetized), map their stream files and index their packets
 * (statistics, lost packets, discarded events).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/array.h"
#include "reader_stream.h"

#define METADATA_MAX (64u << 20)
#define MAX_DIR_DEPTH 16
#define PKT_META_MAGIC 0x75D11D57u
#define PKT_META_HEADER 37u

/* Sort key of a stream file name: `<prefix>_<number>` sorts by prefix,
 * then numerically; other names by name after them. */
static int name_cmp(const void *a, const void *b)
{
	const char *x = *(char *const *)a, *y = *(char *const *)b;
	const char *ux = strrchr(x, '_'), *uy = strrchr(y, '_');
	if (ux && (!ux[1] || strspn(ux + 1, "0123456789") != strlen(ux + 1)))
		ux = NULL;
	if (uy && (!uy[1] || strspn(uy + 1, "0123456789") != strlen(uy + 1)))
		uy = NULL;
	size_t lx = ux ? (size_t)(ux - x) : strlen(x), ly = uy ? (size_t)(uy - y) : strlen(y);
	int c = memcmp(x, y, lx < ly ? lx : ly);
	if (c)
		return c;
	if (lx != ly)
		return lx < ly ? -1 : 1;
	if (!ux != !uy)
		return ux ? -1 : 1;
	if (ux) {
		const char *nx = ux + 1 + strspn(ux + 1, "0"), *ny = uy + 1 + strspn(uy + 1, "0");
		size_t dx = strlen(nx), dy = strlen(ny);
		if (dx != dy)
			return dx < dy ? -1 : 1;
		c = strcmp(nx, ny);
		if (c)
			return c;
	}
	return strcmp(x, y);
}

static uint32_t ld32(const uint8_t *p, bool be)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return be ? be32toh(v) : le32toh(v);
}

/*
 * Packetized metadata: packets of a 37-byte header, in the trace's byte
 * order (told by how the magic reads):
 *    0 u32 magic 0x75D11D57   4 u8[16] uuid   20 u32 checksum
 *   24 u32 content_size (bits, header included)   28 u32 packet_size (bits)
 *   32 u8 compression  33 u8 encryption  34 u8 checksum scheme
 *   35 u8 major  36 u8 minor
 * then TSDL text up to content_size. The text of every packet, joined,
 * replaces buf (in place: it only shrinks).
 */
static int depacketize(struct rtr_trace *t, const char *path, char *buf, size_t *len)
{
	const uint8_t *b = (const uint8_t *)buf;
	bool be = ld32(b, true) == PKT_META_MAGIC;
	size_t out = 0;
	for (size_t off = 0; off < *len;) {
		if (*len - off < PKT_META_HEADER)
			return rtr_set_error(t, -EINVAL,
					     "%s: byte offset %zu: truncated metadata packet header (%zu bytes left)",
					     path, off, *len - off);
		if (ld32(b + off, be) != PKT_META_MAGIC)
			return rtr_set_error(t, -EINVAL,
					     "%s: byte offset %zu: bad metadata packet magic 0x%08" PRIx32,
					     path, off, ld32(b + off, be));
		uint32_t csize = ld32(b + off + 24, be), psize = ld32(b + off + 28, be);
		if (b[off + 32] || b[off + 33])
			return rtr_set_error(t, -ENOTSUP,
					     "%s: byte offset %zu: compressed or encrypted metadata is not supported",
					     path, off);
		if (psize % 8 || psize / 8 < PKT_META_HEADER || psize / 8 > *len - off ||
		    csize > psize || csize / 8 < PKT_META_HEADER || csize % 8)
			return rtr_set_error(t, -EINVAL,
					     "%s: byte offset %zu: impossible metadata packet sizes (content %" PRIu32 " bits, packet %" PRIu32 " bits, %zu bytes left)",
					     path, off, csize, psize, *len - off);
		size_t n = csize / 8 - PKT_META_HEADER;
		memmove(buf + out, buf + off + PKT_META_HEADER, n);
		out += n;
		off += psize / 8;
	}
	buf[out] = '\0';
	*len = out;
	return 0;
}

static int read_all(struct rtr_trace *t, int fd, const char *path, char **bufp, size_t *lenp)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return rtr_set_error(t, -errno, "%s: %s", path, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return rtr_set_error(t, -EINVAL, "%s: not a regular file", path);
	if ((uint64_t)st.st_size > METADATA_MAX)
		return rtr_set_error(t, -EFBIG, "%s: %lld bytes, too large for metadata", path,
				     (long long)st.st_size);
	size_t size = (size_t)st.st_size, got = 0;
	char *buf = malloc(size + 1);
	if (!buf)
		return rtr_set_error(t, -ENOMEM, "%s: out of memory", path);
	while (got < size) {
		ssize_t n = read(fd, buf + got, size - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;
			free(buf);
			return rtr_set_error(t, -e, "%s: byte offset %zu: %s", path, got, strerror(e));
		}
		if (n == 0)
			break; /* shrank meanwhile: parse what is there */
		got += (size_t)n;
	}
	buf[got] = '\0';
	*bufp = buf;
	*lenp = got;
	return 0;
}

int rtr_meta_load(struct rtr_trace *t, struct rtr_meta *m, const char *path, char *buf,
		  size_t len)
{
	if (len == 0)
		return rtr_set_error(t, -EINVAL, "%s: empty metadata file", path);
	if (len >= 4 && (ld32((const uint8_t *)buf, false) == PKT_META_MAGIC ||
			 ld32((const uint8_t *)buf, true) == PKT_META_MAGIC)) {
		int ret = depacketize(t, path, buf, &len);
		if (ret < 0)
			return ret;
	} else {
		static const char sig[] = "/* CTF 1.8";
		if (len < sizeof(sig) - 1 || memcmp(buf, sig, sizeof(sig) - 1))
			return rtr_set_error(t, -EINVAL,
					     "%s: byte offset 0: not CTF 1.8 metadata (it must begin with \"/* CTF 1.8 */\" or be packetized)",
					     path);
	}
	int ret = rtr_meta_parse(path, buf, len, m, t->err, sizeof(t->err));
	if (ret < 0)
		t->err_code = ret;
	else
		rtr_meta_clock_init(m);
	return ret;
}

static int load_metadata(struct rtr_trace *t, struct rtr_tr *tr)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/metadata", tr->path);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return rtr_set_error(t, -errno, "%s: %s", path, strerror(errno));
	char *buf = NULL;
	size_t len = 0;
	int ret = read_all(t, fd, path, &buf, &len);
	close(fd);
	if (ret < 0)
		return ret;
	ret = rtr_meta_load(t, &tr->meta, path, buf, len);
	free(buf);
	return ret;
}

int rtr_stream_new(struct rtr_trace *t, uint32_t ti, const char *dir, const char *name)
{
	if (t->nr_streams == t->streams_cap) {
		/* Two arrays, one capacity: grow each to the same count. The
		 * cursors move: their back pointers follow. */
		size_t cur_cap = t->streams_cap, stats_cap = t->streams_cap;
		struct rtr_cursor *old = t->cur;
		if (RT_ARRAY_GROW(t->cur, cur_cap, t->nr_streams + 1, 16) < 0)
			return rtr_set_error(t, -ENOMEM, "out of memory");
		if (t->cur != old)
			for (size_t k = 0; k < t->nr_streams; k++)
				for (int s = 0; s < RTR_NR_SCOPES; s++)
					t->cur[k].recs[s].cur = &t->cur[k];
		if (RT_ARRAY_GROW(t->stats, stats_cap, cur_cap, 16) < 0)
			return rtr_set_error(t, -ENOMEM, "out of memory");
		t->streams_cap = cur_cap;
		uint32_t *heap = realloc(t->heap, (cur_cap + 1) * sizeof(*t->heap));
		if (!heap)
			return rtr_set_error(t, -ENOMEM, "out of memory");
		t->heap = heap;
	}
	size_t si = t->nr_streams;
	struct rtr_cursor *c = &t->cur[si];
	struct rtr_stream_stats *st = &t->stats[si];
	memset(c, 0, sizeof(*c));
	memset(st, 0, sizeof(*st));
	size_t len = strlen(dir) + strlen(name) + 2;
	char *path = malloc(len);
	if (!path)
		return rtr_set_error(t, -ENOMEM, "out of memory");
	snprintf(path, len, "%s/%s", dir, name);
	st->path = c->path = path;
	st->trace = c->trace = ti;
	c->stream = (uint32_t)si;
	t->nr_streams++;
	/* The CPU from the name until a packet says it. */
	const char *u = strrchr(name, '_');
	if (u && u[1] && strspn(u + 1, "0123456789") == strlen(u + 1) && strlen(u + 1) < 10)
		st->cpu = (uint32_t)strtoul(u + 1, NULL, 10);
	return (int)si;
}

static int add_stream(struct rtr_trace *t, uint32_t ti, const char *dir, const char *name)
{
	int si = rtr_stream_new(t, ti, dir, name);
	if (si < 0)
		return si;
	struct rtr_cursor *c = &t->cur[si];
	struct rtr_stream_stats *st = &t->stats[si];
	const char *path = c->path;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return rtr_set_error(t, -errno, "%s: %s", path, strerror(errno));
	struct stat sb;
	int ret = 0;
	if (fstat(fd, &sb) < 0) {
		ret = rtr_set_error(t, -errno, "%s: %s", path, strerror(errno));
	} else if ((uint64_t)sb.st_size > SIZE_MAX / 16) {
		ret = rtr_set_error(t, -EFBIG, "%s: file too large", path);
	} else if (sb.st_size > 0) {
		void *m = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (m == MAP_FAILED)
			ret = rtr_set_error(t, -errno, "%s: cannot map: %s", path, strerror(errno));
		else
			c->map = m;
		c->size = (uint64_t)sb.st_size;
	}
	st->bytes = (uint64_t)sb.st_size;
	close(fd);
	return ret;
}

static void free_names(char **v, size_t n)
{
	for (size_t k = 0; k < n; k++)
		free(v[k]);
	free(v);
}

/* Directory entries but . and .. and hidden ones, sorted; *files: how
 * many regular files but `metadata`, *has_meta: a `metadata` file. */
static int list_dir(struct rtr_trace *t, const char *dir, char ***out, size_t *count,
		    bool *has_meta, bool *empty)
{
	DIR *d = opendir(dir);
	if (!d)
		return rtr_set_error(t, -errno, "%s: cannot open the trace directory: %s", dir,
				     strerror(errno));
	char **v = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	*empty = true;
	*has_meta = false;
	int ret = 0;
	while ((de = readdir(d)) != NULL) {
		const char *name = de->d_name;
		if (!strcmp(name, ".") || !strcmp(name, ".."))
			continue;
		*empty = false;
		if (name[0] == '.')
			continue;
		if (!strcmp(name, "metadata")) {
			*has_meta = true;
			continue;
		}
		if (RT_ARRAY_GROW(v, cap, n + 1, 16) < 0) {
			ret = rtr_set_error(t, -ENOMEM, "%s: out of memory", dir);
			break;
		}
		if (!(v[n] = strdup(name))) {
			ret = rtr_set_error(t, -ENOMEM, "%s: out of memory", dir);
			break;
		}
		n++;
	}
	closedir(d);
	if (ret < 0) {
		free_names(v, n);
		return ret;
	}
	if (n)
		qsort(v, n, sizeof(*v), name_cmp);
	*out = v;
	*count = n;
	return 0;
}

static int add_trace(struct rtr_trace *t, const char *dir, char **names, size_t n)
{
	if (RT_ARRAY_GROW(t->traces, t->traces_cap, t->nr_traces + 1, 4) < 0)
		return rtr_set_error(t, -ENOMEM, "out of memory");
	struct rtr_tr *tr = &t->traces[t->nr_traces];
	memset(tr, 0, sizeof(*tr));
	if (!(tr->path = strdup(dir)))
		return rtr_set_error(t, -ENOMEM, "out of memory");
	uint32_t ti = t->nr_traces++;
	int ret = load_metadata(t, tr);
	if (ret < 0)
		return ret;
	tr->first_stream = (uint32_t)t->nr_streams;
	for (size_t k = 0; k < n; k++) {
		char path[4096];
		struct stat sb;
		snprintf(path, sizeof(path), "%s/%s", dir, names[k]);
		if (stat(path, &sb) < 0 || !S_ISREG(sb.st_mode))
			continue;
		ret = add_stream(t, ti, dir, names[k]);
		if (ret < 0)
			return ret;
	}
	t->traces[ti].nr_streams = (uint32_t)t->nr_streams - t->traces[ti].first_stream;
	return 0;
}

/* Every trace under dir (depth first, sorted); *found counts them. */
static int find_traces(struct rtr_trace *t, const char *dir, int depth, size_t *found,
		       bool *top_empty)
{
	char **names = NULL;
	size_t n = 0;
	bool has_meta = false, empty = false;
	int ret = list_dir(t, dir, &names, &n, &has_meta, &empty);
	if (ret < 0)
		return ret;
	if (depth == 0)
		*top_empty = empty;
	if (has_meta) {
		ret = add_trace(t, dir, names, n);
		(*found)++;
	}
	for (size_t k = 0; ret == 0 && k < n && depth < MAX_DIR_DEPTH; k++) {
		char path[4096];
		struct stat sb;
		int len = snprintf(path, sizeof(path), "%s/%s", dir, names[k]);
		if (len < 0 || (size_t)len >= sizeof(path) || lstat(path, &sb) < 0 ||
		    !S_ISDIR(sb.st_mode))
			continue;
		ret = find_traces(t, path, depth + 1, found, top_empty);
	}
	free_names(names, n);
	return ret;
}

static int add_gap(struct rtr_trace *t, const struct rtr_gap *g)
{
	if (RT_ARRAY_GROW(t->gaps, t->gaps_cap, t->nr_gaps + 1, 16) < 0)
		return rtr_set_error(t, -ENOMEM, "out of memory");
	t->gaps[t->nr_gaps++] = *g;
	t->stats[g->stream].packets_lost += g->packets_lost;
	return 0;
}

int rtr_packet_account(struct rtr_trace *t, struct rtr_cursor *c)
{
	struct rtr_stream_stats *st = &t->stats[c->stream];
	const struct rtr_pkt *p = &c->pkt;
	bool has_seq = p->have & (1u << RR_SEQ_NUM);
	struct rtr_gap g = { .stream = c->stream, .ticks_before = c->acct.prev_end,
			     .ticks_after = p->ts_begin };
	if (st->packets == 0) {
		st->stream_class = p->sc->id;
		if (p->have & (1u << RR_CPU_ID))
			st->cpu = (uint32_t)p->cpu;
		if (has_seq)
			g.packets_lost = p->seq;
	} else if (has_seq && p->seq > c->acct.prev_seq + 1 && c->acct.prev_seq != UINT64_MAX) {
		g.packets_lost = p->seq - c->acct.prev_seq - 1;
	}
	if (g.packets_lost && add_gap(t, &g) < 0)
		return t->err_code;
	if (p->discarded > c->acct.prev_disc) {
		/* Lost while this packet was being filled (the counter is
		 * written when it closes): between the previous packet's end
		 * and this one's. */
		struct rtr_gap d = { .stream = c->stream,
				     .ticks_before = st->packets ? c->acct.prev_end : p->ts_begin,
				     .ticks_after = p->ts_end,
				     .events_discarded = p->discarded - c->acct.prev_disc };
		if (add_gap(t, &d) < 0)
			return t->err_code;
	}
	st->packets++;
	st->events_discarded = p->discarded;
	c->acct.prev_disc = p->discarded;
	c->acct.prev_seq = p->seq;
	c->acct.prev_end = p->ts_end;
	return 0;
}

/* Walk every packet of a stream: statistics and gaps; then stand at the
 * first packet. */
static int index_stream(struct rtr_trace *t, struct rtr_cursor *c)
{
	for (uint64_t off = 0; off < c->size;) {
		if (rtr_cursor_packet(c, off) < 0 || rtr_packet_account(t, c) < 0)
			return t->err_code;
		if (RT_ARRAY_GROW(c->pkt_offs, c->pkts_cap, c->nr_pkts + 1, 64) < 0)
			return rtr_set_error(t, -ENOMEM, "out of memory");
		c->pkt_offs[c->nr_pkts++] = off;
		off = c->pkt.packet_end / 8;
	}
	c->clock = 0;
	if (c->size && rtr_cursor_packet(c, 0) < 0)
		return t->err_code;
	return 0;
}

int rtr_classes_build(struct rtr_trace *t)
{
	size_t nc = 0;
	for (uint32_t k = 0; k < t->nr_traces; k++) {
		t->traces[k].cls_base = (uint32_t)nc;
		nc += t->traces[k].meta.nr_classes;
	}
	struct rtr_event_class *v = calloc(nc + 1, sizeof(*v));
	if (!v)
		return rtr_set_error(t, -ENOMEM, "out of memory");
	size_t n = 0;
	for (uint32_t k = 0; k < t->nr_traces; k++) {
		const struct rtr_meta *m = &t->traces[k].meta;
		for (size_t j = 0; j < m->nr_classes; j++) {
			v[n] = m->classes[j];
			v[n++].trace = k;
		}
	}
	free(t->classes);
	t->classes = v;
	t->nr_classes = n;
	return 0;
}

int rtr_cursor_bind(struct rtr_trace *t, struct rtr_cursor *c)
{
	const struct rtr_tr *tr = &t->traces[c->trace];
	c->set = t;
	c->m = &tr->meta;
	c->cls_base = tr->cls_base;
	for (int k = 0; k < RTR_NR_SCOPES; k++)
		c->recs[k].cur = c;
	uint64_t *slots = realloc(c->slots, (tr->meta.nr_slots + 1) * sizeof(*c->slots));
	if (!slots)
		return rtr_set_error(t, -ENOMEM, "out of memory");
	if (tr->meta.nr_slots + 1 > c->nr_slots)
		memset(slots + c->nr_slots, 0, (tr->meta.nr_slots + 1 - c->nr_slots) * sizeof(*slots));
	c->slots = slots;
	c->nr_slots = tr->meta.nr_slots + 1;
	return 0;
}

int rtr_set_load(struct rtr_trace *t, const char *const *dirs, size_t n)
{
	for (size_t k = 0; k < n; k++) {
		size_t found = 0;
		bool empty = false;
		int ret = find_traces(t, dirs[k], 0, &found, &empty);
		if (ret < 0)
			return ret;
		if (!found && empty)
			return rtr_set_error(t, -ENOENT, "%s: empty directory, not a trace", dirs[k]);
		if (!found)
			return rtr_set_error(t, -ENOENT,
					     "%s/metadata: no metadata file (not a CTF trace directory, and none below)",
					     dirs[k]);
	}
	int ret = rtr_classes_build(t);
	if (ret < 0)
		return ret;
	for (size_t s = 0; s < t->nr_streams; s++) {
		struct rtr_cursor *c = &t->cur[s];
		ret = rtr_cursor_bind(t, c);
		if (ret < 0)
			return ret;
		ret = index_stream(t, c);
		if (ret < 0)
			return ret;
	}
	return 0;
}
