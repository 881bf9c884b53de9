/*
 * recovery.c - the files of a buffer set kept for recovery (recovery.h):
 * creating the buffer file, writing and reading back the description
 * NAME.desc (its layout is in recovery.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/context.h"
#include "../common/fs_util.h"
#include "recovery.h"

int cons_recovery_create(const char *dir, const char *prefix, char *name, char *err,
			 size_t errlen)
{
	if (strlen(prefix) + 12 > CONS_RECOVERY_NAME_MAX) {
		snprintf(err, errlen, "%s: name too long", prefix);
		return -ENAMETOOLONG;
	}
	int dfd = rt_dir_open(dir, RT_DIR_CREATE | RT_DIR_PRIVATE, NULL, err, errlen);
	if (dfd < 0)
		return dfd;
	int fd = -EEXIST;
	for (int i = 0; i < 16 && fd == -EEXIST; i++) {
		char file[CONS_RECOVERY_NAME_MAX + 16];
		if (i)
			snprintf(name, CONS_RECOVERY_NAME_MAX + 1, "%s-%d", prefix, i);
		else
			snprintf(name, CONS_RECOVERY_NAME_MAX + 1, "%s", prefix);
		snprintf(file, sizeof(file), "%s" CONS_RING_SUFFIX, name);
		fd = openat(dfd, file, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0)
			fd = -errno;
	}
	close(dfd);
	if (fd < 0)
		snprintf(err, errlen, "cannot create %s/%s" CONS_RING_SUFFIX ": %s", dir, name,
			 strerror(-fd));
	return fd;
}

int cons_recovery_remove(const char *dir, const char *name)
{
	char file[CONS_RECOVERY_NAME_MAX + 16];
	snprintf(file, sizeof(file), "%s" CONS_RING_SUFFIX, name);
	int ret = rt_file_remove(dir, file);
	snprintf(file, sizeof(file), "%s" CONS_DESC_SUFFIX, name);
	int r2 = rt_file_remove(dir, file);
	return ret ? ret : r2;
}

/* ---- encoding ---- */

/* A growing binary buffer; err: -ENOMEM once a growth failed. */
struct bin {
	unsigned char *data;
	size_t len, cap;
	int err;
};

static void put(struct bin *b, const void *p, size_t n)
{
	if (b->err)
		return;
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 1024;
		while (cap < b->len + n)
			cap *= 2;
		unsigned char *d = realloc(b->data, cap);
		if (!d) {
			b->err = -ENOMEM;
			return;
		}
		b->data = d;
		b->cap = cap;
	}
	memcpy(b->data + b->len, p, n);
	b->len += n;
}

static void put_u32(struct bin *b, uint32_t v)
{
	put(b, &v, 4);
}

static void put_u64(struct bin *b, uint64_t v)
{
	put(b, &v, 8);
}

/* A string of the format; false (nothing written) when it is too long. */
static bool put_str(struct bin *b, const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n > CONS_DESC_STR_MAX)
		return false;
	put_u32(b, (uint32_t)n);
	put(b, s ? s : "", n);
	return true;
}

int cons_recovery_describe(const char *dir, const char *name, const struct cons_trace_desc *t,
			   const struct cons_channel_desc *ch, char *err, size_t errlen)
{
	struct ctf_event_class *ev = NULL;
	uint32_t nr = 0;
	uint64_t gen;
	int ret = t->classes.copy(t->classes.arg, 0, &ev, &nr, &gen);
	if (ret < 0) {
		snprintf(err, errlen, "cannot describe %s/%s: %s", dir, name, strerror(-ret));
		return ret;
	}
	struct bin b = { 0 };
	uint32_t nctx = ch->nr_contexts < RT_CTX_COUNT ? ch->nr_contexts : RT_CTX_COUNT;
	put(&b, CONS_DESC_MAGIC, 8);
	put_u32(&b, CONS_DESC_VERSION);
	put_u32(&b, 0);		/* the size, below */
	put(&b, t->uuid, 16);
	put_u32(&b, ch->stream_id);
	put_u32(&b, nctx);
	put_u64(&b, (uint64_t)t->vpid);
	put_u64(&b, t->clock.freq);
	put_u64(&b, (uint64_t)t->clock.offset_s);
	put_u64(&b, t->clock.offset);
	put_u64(&b, t->clock.precision);
	put_u32(&b, nr);
	put_u32(&b, ch->overwrite ? CONS_DESC_F_OVERWRITE : 0);
	for (uint32_t i = 0; i < nctx; i++)
		put_u32(&b, ch->contexts[i]);
	bool ok = put_str(&b, ch->name) && put_str(&b, t->procname) &&
		  put_str(&b, t->trace_name) && put_str(&b, t->clock.name) &&
		  put_str(&b, t->clock.description);
	for (uint32_t i = 0; ok && i < nr; i++) {
		ok = ev[i].nr_fields <= CONS_DESC_FIELDS_MAX && (i == 0 || ev[i].id > ev[i - 1].id);
		put_u32(&b, ev[i].id);
		put_u32(&b, (uint32_t)ev[i].loglevel);
		put_u32(&b, ev[i].nr_fields);
		ok = ok && put_str(&b, ev[i].provider) && put_str(&b, ev[i].name);
		for (uint32_t f = 0; ok && f < ev[i].nr_fields; f++) {
			put_u32(&b, ev[i].fields[f].type);
			ok = put_str(&b, ev[i].fields[f].name);
		}
	}
	free(ev);
	ret = b.err ? b.err : !ok || b.len > CONS_DESC_SIZE_MAX ? -EINVAL : 0;
	if (ret < 0) {
		snprintf(err, errlen, "cannot describe %s/%s: %s", dir, name,
			 ret == -EINVAL ? "past the format's limits" : strerror(-ret));
		goto out;
	}
	uint32_t size = (uint32_t)b.len;
	memcpy(b.data + 12, &size, 4);
	char file[CONS_RECOVERY_NAME_MAX + 16];
	snprintf(file, sizeof(file), "%s" CONS_DESC_SUFFIX, name);
	ret = rt_file_write_atomic(dir, file, b.data, b.len, false, err, errlen);
out:
	free(b.data);
	return ret;
}

/* ---- decoding ---- */

struct reader {
	const unsigned char *p, *end;
	char *str;		/* where the next string is copied */
	const char *what;	/* the first thing that did not decode */
};

/* `n` bytes into v; false (and `what` remembered) past the end. */
static bool get_n(struct reader *r, void *v, size_t n, const char *what)
{
	if ((size_t)(r->end - r->p) < n) {
		r->what = r->what ? r->what : what;
		return false;
	}
	memcpy(v, r->p, n);
	r->p += n;
	return true;
}

static bool get_u32(struct reader *r, uint32_t *v, const char *what)
{
	return get_n(r, v, 4, what);
}

static bool get_u64(struct reader *r, uint64_t *v, const char *what)
{
	return get_n(r, v, 8, what);
}

/* A string into the string area (room for it: the area is as large as
 * the description, and every string's length field is longer than its
 * NUL). */
static bool get_str(struct reader *r, const char **s, const char *what)
{
	uint32_t n;
	if (!get_u32(r, &n, what))
		return false;
	if (n > CONS_DESC_STR_MAX || (size_t)(r->end - r->p) < n || memchr(r->p, 0, n)) {
		r->what = r->what ? r->what : what;
		return false;
	}
	memcpy(r->str, r->p, n);
	r->str[n] = '\0';
	*s = r->str;
	r->str += n + 1;
	r->p += n;
	return true;
}

static void rec_lock(void *arg)
{
	(void)arg;
}

/* Binary search of the classes by id (strictly increasing). */
static const struct ctf_event_class *rec_find(const struct cons_recovered *r, uint32_t id)
{
	size_t lo = 0, hi = r->nr_classes;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (r->classes[mid].id == id)
			return &r->classes[mid];
		if (r->classes[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static bool rec_fields(void *arg, uint32_t stream_id, uint32_t id,
		       const struct rt_field_desc **fields, uint32_t *nr)
{
	const struct cons_recovered *r = arg;
	const struct ctf_event_class *c = stream_id == r->desc.stream_id ? rec_find(r, id) : NULL;
	if (!c)
		return false;
	*fields = c->fields;
	*nr = c->nr_fields;
	return true;
}

static int rec_copy(void *arg, uint32_t from, struct ctf_event_class **ev, uint32_t *nr,
		    uint64_t *generation)
{
	const struct cons_recovered *r = arg;
	uint32_t n = from < r->nr_classes ? r->nr_classes - from : 0;
	*ev = calloc(n ? n : 1, sizeof(**ev));
	if (!*ev)
		return -ENOMEM;
	if (n)
		memcpy(*ev, r->classes + from, n * sizeof(**ev));
	*nr = n;
	*generation = r->nr_classes;
	return 0;
}

static uint64_t rec_generation(void *arg)
{
	const struct cons_recovered *r = arg;
	return r->nr_classes;
}

void cons_recovered_free(struct cons_recovered *r)
{
	free(r->classes);
	free(r->fields);
	free(r->strings);
	*r = (struct cons_recovered){ 0 };
}

int cons_recovery_decode(const void *data, size_t len, struct cons_recovered *r, char *err,
			 size_t errlen)
{
	*r = (struct cons_recovered){ 0 };
	const unsigned char *d = data;
	uint32_t version, size;
	if (len < 88 || memcmp(d, CONS_DESC_MAGIC, 8) != 0) {
		snprintf(err, errlen, "not a ringtrace buffer description");
		return -EINVAL;
	}
	memcpy(&version, d + 8, 4);
	memcpy(&size, d + 12, 4);
	if (version != CONS_DESC_VERSION) {
		snprintf(err, errlen, "description version %u (this ringtrace reads %u)", version,
			 CONS_DESC_VERSION);
		return -EPROTO;
	}
	if (size != len || len > CONS_DESC_SIZE_MAX) {
		snprintf(err, errlen, "the description says %u bytes, the file has %zu", size, len);
		return -EINVAL;
	}
	/* Every class takes at least 20 bytes and every field 8: bounds
	 * for the arrays before anything is allocated from the counts. */
	uint32_t nctx = 0, nr = 0, flags = 0;
	uint64_t vpid = 0, offset_s = 0;
	struct reader rd = { .p = d + 16, .end = d + len };
	memcpy(r->trace.uuid, d + 16, 16);
	rd.p += 16;
	get_u32(&rd, &r->desc.stream_id, "stream id");
	get_u32(&rd, &nctx, "contexts");
	get_u64(&rd, &vpid, "vpid");
	get_u64(&rd, &r->trace.clock.freq, "clock");
	get_u64(&rd, &offset_s, "clock");
	get_u64(&rd, &r->trace.clock.offset, "clock");
	get_u64(&rd, &r->trace.clock.precision, "clock");
	get_u32(&rd, &nr, "classes");
	get_u32(&rd, &flags, "flags");
	r->trace.vpid = (int64_t)vpid;
	r->trace.clock.offset_s = (int64_t)offset_s;
	int ret = -EINVAL;
	if (nctx > RT_CTX_COUNT || nr > len / 20 || (flags & ~CONS_DESC_F_OVERWRITE) ||
	    r->trace.clock.freq == 0 || r->trace.clock.offset >= r->trace.clock.freq) {
		snprintf(err, errlen, "damaged description (%s)",
			 nctx > RT_CTX_COUNT ? "contexts" : nr > len / 20 ? "classes"
							   : flags & ~CONS_DESC_F_OVERWRITE ? "flags"
							   : "clock");
		goto fail;
	}
	r->desc.nr_contexts = nctx;
	r->desc.overwrite = flags & CONS_DESC_F_OVERWRITE;
	for (uint32_t i = 0; i < nctx; i++) {
		if (!get_u32(&rd, &r->desc.contexts[i], "contexts") ||
		    !rt_context_name(r->desc.contexts[i])) {
			snprintf(err, errlen, "damaged description (contexts)");
			goto fail;
		}
	}
	ret = -ENOMEM;
	r->strings = malloc(len);
	r->classes = calloc(nr ? nr : 1, sizeof(*r->classes));
	r->fields = calloc(len / 8, sizeof(*r->fields));
	if (!r->strings || !r->classes || !r->fields) {
		snprintf(err, errlen, "%s", strerror(ENOMEM));
		goto fail;
	}
	rd.str = r->strings;
	const char *procname = NULL, *cname = NULL, *cdesc = NULL;
	ret = -EINVAL;
	if (!get_str(&rd, &r->desc.name, "channel name") || !get_str(&rd, &procname, "procname") ||
	    !get_str(&rd, &r->trace.trace_name, "trace name") ||
	    !get_str(&rd, &cname, "clock name") || !get_str(&rd, &cdesc, "clock description") ||
	    !*r->desc.name || strchr(r->desc.name, '/') || !*cname) {
		snprintf(err, errlen, "damaged description (%s)", rd.what ? rd.what : "names");
		goto fail;
	}
	r->trace.procname = *procname ? procname : NULL;
	r->trace.clock.name = cname;
	r->trace.clock.description = cdesc;
	size_t nf = 0;
	for (uint32_t i = 0; i < nr; i++) {
		struct ctf_event_class *c = &r->classes[i];
		uint32_t loglevel;
		if (!get_u32(&rd, &c->id, "class") || !get_u32(&rd, &loglevel, "class") ||
		    !get_u32(&rd, &c->nr_fields, "class") || c->nr_fields > CONS_DESC_FIELDS_MAX ||
		    (i && c->id <= r->classes[i - 1].id) || !get_str(&rd, &c->provider, "class") ||
		    !get_str(&rd, &c->name, "class") || !*c->name) {
			snprintf(err, errlen, "damaged description (event class %u)", i);
			goto fail;
		}
		c->loglevel = (int32_t)loglevel;
		c->stream_id = r->desc.stream_id;
		if (nf + c->nr_fields > len / 8) {
			snprintf(err, errlen, "damaged description (event class %u)", i);
			goto fail;
		}
		c->fields = r->fields + nf;
		for (uint32_t f = 0; f < c->nr_fields; f++, nf++) {
			if (!get_u32(&rd, &r->fields[nf].type, "field") ||
			    r->fields[nf].type < RT_TYPE_S8 || r->fields[nf].type > RT_TYPE_BYTES ||
			    !get_str(&rd, &r->fields[nf].name, "field") || !*r->fields[nf].name) {
				snprintf(err, errlen, "damaged description (event class %u, field %u)",
					 i, f);
				goto fail;
			}
		}
	}
	if (rd.p != rd.end) {
		snprintf(err, errlen, "damaged description (%zu bytes past its end)",
			 (size_t)(rd.end - rd.p));
		goto fail;
	}
	r->nr_classes = nr;
	r->trace.classes = (struct cons_classes){
		.arg = r, .lock = rec_lock, .unlock = rec_lock, .fields = rec_fields,
		.copy = rec_copy, .generation = rec_generation,
	};
	return 0;

fail:
	cons_recovered_free(r);
	return ret;
}
