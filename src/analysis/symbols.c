/*
 * symbols.c - the `ip` context as "symbol+0xOFF": the objects each
 * process had loaded, from its state dump in the trace
 * (lttng_ust_statedump:bin_info, build_id, debug_link and lttng_ust_dl's
 * dlopen, build_id, debug_link: src/lib/statedump.c), and their ELF
 * symbols through elfutils' libdwfl.
 *
 * An object's file is found by the path the dump gives, when its build
 * id is the dump's (or the dump gave none), else as
 * ROOT/.build-id/NN/REST.debug, ROOT being the debug root (rt_debug_dir:
 * /usr/lib/debug or RINGTRACE_DEBUG_DIR); its symbols come from its own
 * .symtab, else from the separate debug file that libdwfl asks for
 * (build id, then .gnu_debuglink under ROOT and beside the object), else
 * from .dynsym. Each file is opened once per table
 * (cached, found or not). A trace is hostile input: paths are only
 * opened read-only, non-blocking, and used only if they are regular
 * files; nothing found means the raw address is shown, never an error.
 *
 * Addresses: a position-independent object (is_pic) was loaded at
 * baddr, the address of its lowest PT_LOAD segment, so the file's
 * address of ip is ip - baddr + that segment's p_vaddr; for the others
 * it is ip.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <elfutils/libdwfl.h>
#include <gelf.h>

#include "../common/array.h"
#include "../common/debug_dir.h"
#include "../common/hex.h"
#include "analysis.h"

#define BUILD_ID_MAX 64
/* Bounds against a hostile trace: objects and threads kept (more are
 * ignored), files opened, and objects looked at around an address (real
 * objects do not overlap; crafted ones cost at most this much). */
#define MAX_ENTRIES (1u << 20)
#define MAX_FILES 4096
#define NEAR 64

/* One object of one process, as a dump listed it. */
struct sym_object {
	int64_t vpid;
	uint64_t seq;			/* order in the trace: the latest wins */
	uint64_t baddr, memsz;
	bool is_pic;
	char *path;			/* owned */
	uint8_t build_id[BUILD_ID_MAX];
	uint32_t build_id_len;
	int32_t file;			/* index in files, -1: not looked up */
};

/* One file looked up (found or not). */
struct sym_file {
	char *key;			/* owned: path, NUL, build id in hex */
	Dwfl *dwfl;			/* NULL: not found */
	Dwfl_Module *mod;
	uint64_t first_vaddr;		/* its lowest PT_LOAD's p_vaddr */
};

struct sym_thread {
	int64_t vpid, tid;
	uint64_t seq;
	char *name;			/* owned */
};

struct ra_symbols {
	struct sym_object *obj;
	size_t nr_obj, cap_obj;
	struct sym_file *files;
	size_t nr_files, cap_files;
	struct sym_thread *threads;
	size_t nr_threads, cap_threads;
};

/* An open regular file, read-only, or -1 (missing, not a regular file). */
static int open_regular(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return -1;
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* ROOT/.build-id/NN/REST.debug into out. */
static void build_id_path(const uint8_t *id, size_t len, char *out, size_t outlen)
{
	char hex[2 * BUILD_ID_MAX + 1];
	rt_hex_encode(id, len, hex);
	snprintf(out, outlen, "%s/.build-id/%.2s/%s.debug", rt_debug_dir(), hex, hex + 2);
}

/* libdwfl's question: the separate debug file of a module whose file
 * has no .symtab. Returns an open descriptor (libdwfl checks its build
 * id or CRC) or -1. */
static int find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
			  Dwarf_Addr base, const char *file_name, const char *debuglink_file,
			  GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	(void)userdata, (void)modname, (void)base, (void)debuglink_crc;
	char path[PATH_MAX];
	const unsigned char *id;
	GElf_Addr vaddr;
	int len = dwfl_module_build_id(mod, &id, &vaddr);
	int fd = -1;
	if (len > 0 && len <= BUILD_ID_MAX) {
		build_id_path(id, (size_t)len, path, sizeof(path));
		fd = open_regular(path);
	}
	if (fd < 0 && debuglink_file && !strchr(debuglink_file, '/') && file_name &&
	    file_name[0] == '/') {
		const char *slash = strrchr(file_name, '/');
		int dir = (int)(slash - file_name);
		int n = snprintf(path, sizeof(path), "%s%.*s/%s", rt_debug_dir(), dir, file_name,
				 debuglink_file);
		if (n > 0 && (size_t)n < sizeof(path))
			fd = open_regular(path);
		n = fd < 0 ? snprintf(path, sizeof(path), "%.*s/.debug/%s", dir, file_name,
				      debuglink_file) : -1;
		if (n > 0 && (size_t)n < sizeof(path))
			fd = open_regular(path);
	}
	if (fd >= 0)
		*debuginfo_file_name = strdup(path);
	return fd;
}

static const Dwfl_Callbacks callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = find_debuginfo,
	.section_address = dwfl_offline_section_address,
};

/* Report `path` as the one module of a new Dwfl into f; false if it
 * cannot be read as ELF or its build id is not `id` (when given). */
static bool report_file(struct sym_file *f, const char *path, const uint8_t *id,
			uint32_t id_len)
{
	int fd = open_regular(path);
	if (fd < 0)
		return false;
	Dwfl *d = dwfl_begin(&callbacks);
	if (!d) {
		close(fd);
		return false;
	}
	/* Placed at 0 with p_vaddr added: module addresses are the file's. */
	Dwfl_Module *m = dwfl_report_elf(d, path, path, fd, 0, true);
	if (!m)
		close(fd);	/* consumed only on success */
	const unsigned char *mid;
	GElf_Addr vaddr;
	int mlen = m ? dwfl_module_build_id(m, &mid, &vaddr) : -1;
	GElf_Addr bias;
	Elf *elf = m ? dwfl_module_getelf(m, &bias) : NULL;
	size_t phnum = 0;
	if (!m || dwfl_report_end(d, NULL, NULL) != 0 || !elf ||
	    (id_len && (mlen != (int)id_len || memcmp(mid, id, id_len))) ||
	    elf_getphdrnum(elf, &phnum) != 0) {
		dwfl_end(d);
		return false;
	}
	uint64_t first = UINT64_MAX;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD && ph.p_vaddr < first)
			first = ph.p_vaddr;
	}
	f->dwfl = d;
	f->mod = m;
	f->first_vaddr = first == UINT64_MAX ? 0 : first;
	return true;
}

/* The file of object o, looked up once per (path, build id). */
static struct sym_file *object_file(struct ra_symbols *s, struct sym_object *o)
{
	if (o->file >= 0)
		return &s->files[o->file];
	char hex[2 * BUILD_ID_MAX + 1];
	rt_hex_encode(o->build_id, o->build_id_len, hex);
	size_t plen = strlen(o->path), klen = plen + 1 + 2 * o->build_id_len;
	for (size_t i = 0; i < s->nr_files; i++) {
		if (!memcmp(s->files[i].key, o->path, plen + 1) &&
		    !strcmp(s->files[i].key + plen + 1, hex)) {
			o->file = (int32_t)i;
			return &s->files[i];
		}
	}
	if (s->nr_files >= MAX_FILES ||
	    RT_ARRAY_GROW(s->files, s->cap_files, s->nr_files + 1, 16) < 0)
		return NULL;
	struct sym_file *f = &s->files[s->nr_files];
	memset(f, 0, sizeof(*f));
	if (!(f->key = malloc(klen + 1)))
		return NULL;
	memcpy(f->key, o->path, plen + 1);
	memcpy(f->key + plen + 1, hex, 2 * o->build_id_len + 1);
	o->file = (int32_t)s->nr_files++;
	if (!(o->path[0] == '/' && report_file(f, o->path, o->build_id, o->build_id_len)) &&
	    o->build_id_len) {
		char path[PATH_MAX];
		build_id_path(o->build_id, o->build_id_len, path, sizeof(path));
		report_file(f, path, o->build_id, o->build_id_len);
	}
	return f;
}

bool ra_symbols_resolve(struct ra_symbols *s, int64_t vpid, uint64_t ip, char *out,
			size_t len)
{
	if (!s || !s->nr_obj)
		return false;
	/* Objects are sorted by (vpid, baddr): the last one starting at or
	 * below ip, and the few before it; the latest in the trace holding
	 * ip wins (an address may be reused after dlclose). */
	size_t lo = 0, hi = s->nr_obj;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct sym_object *m = &s->obj[mid];
		if (m->vpid < vpid || (m->vpid == vpid && m->baddr <= ip))
			lo = mid + 1;
		else
			hi = mid;
	}
	struct sym_object *o = NULL;
	for (size_t i = lo, n = 0; i-- > 0 && n < NEAR; n++) {
		struct sym_object *c = &s->obj[i];
		if (c->vpid != vpid)
			break;
		if (ip - c->baddr < c->memsz && (!o || c->seq > o->seq))
			o = c;
	}
	if (!o)
		return false;
	struct sym_file *f = object_file(s, o);
	if (!f || !f->dwfl)
		return false;
	GElf_Addr addr = o->is_pic ? ip - o->baddr + f->first_vaddr : ip;
	GElf_Off off;
	GElf_Sym sym;
	const char *name = dwfl_module_addrinfo(f->mod, addr, &off, &sym, NULL, NULL,
						NULL);
	if (!name || !*name)
		return false;
	snprintf(out, len, "%s+0x%" PRIx64, name, (uint64_t)off);
	/* A file is hostile input too: its names are shown as
	 * printable ASCII only. */
	for (char *p = out; *p; p++)
		if (*p <= ' ' || *p >= 0x7f)
			*p = '?';
	return true;
}

const char *ra_symbols_thread_name(const struct ra_symbols *s, int64_t vpid, int64_t tid)
{
	if (!s)
		return NULL;
	/* Sorted by (vpid, tid, seq): the last entry of that thread. */
	size_t lo = 0, hi = s->nr_threads;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct sym_thread *m = &s->threads[mid];
		if (m->vpid < vpid || (m->vpid == vpid && m->tid <= tid))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo && s->threads[lo - 1].vpid == vpid && s->threads[lo - 1].tid == tid)
		return s->threads[lo - 1].name;
	return NULL;
}

static int cmp_u64(uint64_t a, uint64_t b)
{
	return a < b ? -1 : a > b;
}

static int cmp_i64(int64_t a, int64_t b)
{
	return a < b ? -1 : a > b;
}

static int cmp_object(const void *pa, const void *pb)
{
	const struct sym_object *a = pa, *b = pb;
	int c = cmp_i64(a->vpid, b->vpid);
	if (!c)
		c = cmp_u64(a->baddr, b->baddr);
	return c ? c : cmp_u64(a->seq, b->seq);
}

static int cmp_thread(const void *pa, const void *pb)
{
	const struct sym_thread *a = pa, *b = pb;
	int c = cmp_i64(a->vpid, b->vpid);
	if (!c)
		c = cmp_i64(a->tid, b->tid);
	return c ? c : cmp_u64(a->seq, b->seq);
}

/* The events this table reads, by kind. */
enum sym_kind { SYM_NONE, SYM_BIN_INFO, SYM_DLOPEN, SYM_BUILD_ID, SYM_THREAD };

static enum sym_kind kind_of(const char *name)
{
	static const struct {
		const char *name;
		enum sym_kind kind;
	} names[] = {
		{ "lttng_ust_statedump:bin_info", SYM_BIN_INFO },
		{ "lttng_ust_dl:dlopen", SYM_DLOPEN },
		{ "lttng_ust_statedump:build_id", SYM_BUILD_ID },
		{ "lttng_ust_dl:build_id", SYM_BUILD_ID },
		{ "lttng_ust_statedump:thread", SYM_THREAD },
	};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(name, names[i].name))
			return names[i].kind;
	return SYM_NONE;
}

int64_t ra_event_vpid(const struct rtr_trace *t, const struct rtr_event *ev)
{
	struct rtr_value v;
	if (ra_event_context(ev, "vpid", &v) == 0) {
		if (v.type == RTR_INT && v.i)
			return v.i;
		if (v.type == RTR_UINT && v.u && v.u <= INT64_MAX)
			return (int64_t)v.u;
	}
	/* A per-process trace says whose it is in its environment. */
	const struct rtr_env *e = rtr_trace_env_get(t, ev->trace, "vpid");
	return e && !e->is_string && e->i > 0 ? e->i : 0;
}

static bool get_u64(const struct rtr_event *ev, const char *name, uint64_t *out)
{
	struct rtr_value v;
	if (rtr_field_by_name(ev, name, &v) < 0 || (v.type != RTR_UINT && v.type != RTR_INT))
		return false;
	*out = v.u;
	return true;
}

/* One state dump event into s. 0 or -ENOMEM (malformed events are
 * skipped). */
static int add_event(struct ra_symbols *s, const struct rtr_trace *t,
		     const struct rtr_event *ev, enum sym_kind kind)
{
	struct rtr_value v;
	int64_t vpid = ra_event_vpid(t, ev);
	if (kind == SYM_THREAD) {
		uint64_t tid;
		if (!get_u64(ev, "tid", &tid) || rtr_field_by_name(ev, "name", &v) < 0 ||
		    v.type != RTR_STRING || s->nr_threads >= MAX_ENTRIES)
			return 0;
		if (RT_ARRAY_GROW(s->threads, s->cap_threads, s->nr_threads + 1, 16) < 0)
			return -ENOMEM;
		struct sym_thread *th = &s->threads[s->nr_threads];
		th->vpid = vpid;
		th->tid = (int64_t)tid;
		th->seq = s->nr_threads;
		if (!(th->name = strndup(v.s.p, v.s.len)))
			return -ENOMEM;
		s->nr_threads++;
		return 0;
	}
	uint64_t baddr;
	if (!get_u64(ev, "baddr", &baddr))
		return 0;
	if (kind == SYM_BUILD_ID) {
		/* Ours are byte sequences, LTTng-UST's arrays of 8-bit
		 * integers. */
		uint8_t id[BUILD_ID_MAX];
		size_t len = 0;
		if (rtr_field_by_name(ev, "build_id", &v) < 0)
			return 0;
		if (v.type == RTR_BYTES && v.bytes.len <= BUILD_ID_MAX) {
			len = v.bytes.len;
			memcpy(id, v.bytes.p, len);
		} else if (v.type == RTR_ARRAY && rtr_value_count(&v) <= BUILD_ID_MAX) {
			for (uint32_t i = 0; i < rtr_value_count(&v); i++) {
				struct rtr_value b;
				if (rtr_value_child(&v, i, &b, NULL) < 0 || b.type != RTR_UINT ||
				    b.u > 0xff)
					return 0;
				id[len++] = (uint8_t)b.u;
			}
		}
		if (!len)
			return 0;
		/* The object it follows (just before it in a dump): the
		 * latest of that process there, among the last few. */
		for (size_t i = s->nr_obj, n = 0; i-- > 0 && n < NEAR; n++) {
			struct sym_object *o = &s->obj[i];
			if (o->vpid == vpid && o->baddr == baddr) {
				memcpy(o->build_id, id, len);
				o->build_id_len = (uint32_t)len;
				break;
			}
		}
		return 0;
	}
	uint64_t memsz, pic = 1;
	if (!get_u64(ev, "memsz", &memsz) || rtr_field_by_name(ev, "path", &v) < 0 ||
	    v.type != RTR_STRING || v.s.len == 0 || v.s.len >= PATH_MAX)
		return 0;
	/* lttng_ust_dl:dlopen has no is_pic: dlopen'ed objects are. */
	if (kind == SYM_BIN_INFO && !get_u64(ev, "is_pic", &pic))
		return 0;
	if (s->nr_obj >= MAX_ENTRIES)
		return 0;
	if (RT_ARRAY_GROW(s->obj, s->cap_obj, s->nr_obj + 1, 64) < 0)
		return -ENOMEM;
	struct sym_object *o = &s->obj[s->nr_obj];
	memset(o, 0, sizeof(*o));
	o->vpid = vpid;
	o->seq = s->nr_obj;
	o->baddr = baddr;
	o->memsz = memsz;
	o->is_pic = pic != 0;
	o->file = -1;
	if (!(o->path = strndup(v.s.p, v.s.len)))
		return -ENOMEM;
	s->nr_obj++;
	return 0;
}

int ra_symbols_load(const char *const *dirs, size_t nr, struct ra_symbols **out, char *err,
		    size_t errlen)
{
	*out = NULL;
	if (rt_debug_dir_check() < 0) {
		snprintf(err, errlen, "%s must be an absolute path without ':'",
			 RT_DEBUG_DIR_ENV);
		return -EINVAL;
	}
	struct ra_symbols *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	struct rtr_trace *t;
	int ret = rtr_open_many(dirs, nr, &t, err, errlen);
	if (ret < 0) {
		free(s);
		return ret;
	}
	const struct rtr_event_class *cls;
	size_t nr_cls = rtr_event_classes(t, &cls);
	enum sym_kind *kinds = calloc(nr_cls ? nr_cls : 1, sizeof(*kinds));
	bool any = false;
	for (size_t i = 0; kinds && i < nr_cls; i++)
		any |= (kinds[i] = kind_of(cls[i].name)) != SYM_NONE;
	if (!kinds) {
		ret = -ENOMEM;
		goto out;
	}
	/* Only the dump's events are decoded; a trace without them is
	 * not read at all. */
	struct rtr_event ev;
	while (any && (ret = rtr_next(t, &ev)) > 0) {
		/* The reader's classes are one array: the event's is in it. */
		enum sym_kind kind = kinds[ev.cls - cls];
		if (kind != SYM_NONE && (ret = add_event(s, t, &ev, kind)) < 0)
			break;
	}
	/* Damaged data: what was read before it is kept (the caller's own
	 * pass reports the damage). */
	if (ret == -ENOMEM)
		snprintf(err, errlen, "out of memory reading the state dump");
	else
		ret = 0;
	if (s->nr_obj)
		qsort(s->obj, s->nr_obj, sizeof(*s->obj), cmp_object);
	if (s->nr_threads)
		qsort(s->threads, s->nr_threads, sizeof(*s->threads), cmp_thread);
out:
	free(kinds);
	rtr_close(t);
	if (ret < 0) {
		ra_symbols_free(s);
		return ret;
	}
	*out = s;
	return 0;
}

void ra_symbols_free(struct ra_symbols *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nr_obj; i++)
		free(s->obj[i].path);
	for (size_t i = 0; i < s->nr_files; i++) {
		free(s->files[i].key);
		if (s->files[i].dwfl)
			dwfl_end(s->files[i].dwfl);
	}
	for (size_t i = 0; i < s->nr_threads; i++)
		free(s->threads[i].name);
	free(s->obj);
	free(s->files);
	free(s->threads);
	free(s);
}
