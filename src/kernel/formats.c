/*
 * formats.c - event classes from ftrace's format files, parsed by
 * libtraceevent, named and laid out as LTTng's kernel traces have them
 * (see kernel.h and docs/kernel.md):
 *  - syscalls:sys_enter_NAME -> syscall_entry_NAME (the arguments by name,
 *    __syscall_nr left out), sys_exit_NAME -> syscall_exit_NAME (ret);
 *  - the sched system's thread ids, which ftrace calls pid, prev_pid,
 *    next_pid, parent_pid, child_pid, ..., are tid, prev_tid, ...;
 *  - a user-space probe's uprobe event (group RTK_PROBE_GROUP_PREFIX...)
 *    keeps its name, its __probe_ip (__probe_func, __probe_ret_ip) is
 *    probe_ip (probe_func, probe_ret_ip);
 *  - every other event keeps ftrace's event and field names.
 * common_pid becomes the event context's tid; the other common fields
 * (type, flags, preempt count) are left out.
 * The state dump's classes (rtk_formats_add_statedump) are LTTng's
 * lttng_statedump_start, _end and _process_state; their fields are read
 * from the dump's records (kernel_internal.h) as those of other events
 * are from theirs.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <traceevent/event-parse.h>

#include "../common/array.h"
#include "kernel_internal.h"

struct rtk_formats {
	struct tep_handle *tep;
	struct rtk_class *classes;
	size_t nr, cap;
	/* ftrace type id (u16, common_type) -> index + 1 into classes. */
	uint32_t *by_id;
	/* The state dump: ftrace:raw_data's type id (-1: not declared), the
	 * offset of its `id` field in the record, and the class of each
	 * enum rtk_dump_kind (index + 1). */
	int dump_type;
	int dump_base;
	uint32_t dump_class[RTK_DUMP_PID_NS + 1];
};

#define RTK_MAX_IDS 65536

struct rtk_formats *rtk_formats_new(void)
{
	struct rtk_formats *f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->tep = tep_alloc();
	f->by_id = calloc(RTK_MAX_IDS, sizeof(*f->by_id));
	if (!f->tep || !f->by_id) {
		rtk_formats_free(f);
		return NULL;
	}
	tep_set_long_size(f->tep, (int)sizeof(long));
	f->dump_type = -1;
	return f;
}

static void free_class(struct rtk_class *c)
{
	for (uint32_t k = 0; k < c->nr_fields; k++)
		free(c->names[k]);
	free(c->names);
	free(c->descs);
	free(c->fields);
	free(c->name);
}

void rtk_formats_free(struct rtk_formats *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->nr; i++)
		free_class(&f->classes[i]);
	free(f->classes);
	free(f->by_id);
	if (f->tep)
		tep_free(f->tep);
	free(f);
}

size_t rtk_formats_count(const struct rtk_formats *f)
{
	return f->nr;
}

const char *rtk_formats_name(const struct rtk_formats *f, size_t i)
{
	return i < f->nr ? f->classes[i].name : NULL;
}

const struct rtk_class *rtk_formats_class(const struct rtk_formats *f, size_t i)
{
	return i < f->nr ? &f->classes[i] : NULL;
}

/* The class of an ftrace type id, or NULL. */
static const struct rtk_class *rtk_formats_find(const struct rtk_formats *f, int ftrace_id)
{
	if (ftrace_id < 0 || ftrace_id >= RTK_MAX_IDS || !f->by_id[ftrace_id])
		return NULL;
	return &f->classes[f->by_id[ftrace_id] - 1];
}

const struct rtk_class *rtk_formats_record_class(const struct rtk_formats *f, const char *rec,
						 int size)
{
	uint16_t type;
	if (size < 2)
		return NULL;
	memcpy(&type, rec, 2);
	if (type != f->dump_type)
		return rtk_formats_find(f, type);
	struct rtk_dump_header h;
	if (size < f->dump_base + (int)sizeof(h))
		return NULL;
	memcpy(&h, rec + f->dump_base, sizeof(h));
	if (h.id != RTK_DUMP_ID || h.kind < RTK_DUMP_START || h.kind > RTK_DUMP_PID_NS ||
	    !f->dump_class[h.kind])
		return NULL;
	return &f->classes[f->dump_class[h.kind] - 1];
}

/* The CTF name of the event (see the top of the file). */
static char *class_name(const char *system, const char *event, int *syscall)
{
	char *out = NULL;
	*syscall = 0;
	if (!strcmp(system, "syscalls") && !strncmp(event, "sys_enter_", 10)) {
		*syscall = 1;
		return asprintf(&out, "syscall_entry_%s", event + 10) < 0 ? NULL : out;
	}
	if (!strcmp(system, "syscalls") && !strncmp(event, "sys_exit_", 9)) {
		*syscall = 1;
		return asprintf(&out, "syscall_exit_%s", event + 9) < 0 ? NULL : out;
	}
	return strdup(event);
}

/* The CTF name of a field. */
static char *field_name(const char *system, const char *name)
{
	size_t n = strlen(name);
	/* A probe's __probe_ip, __probe_func, __probe_ret_ip: probe_ip, ...
	 * (CTF readers take a leading '_' as an escape and drop it). */
	if (!strncmp(system, RTK_PROBE_GROUP_PREFIX, strlen(RTK_PROBE_GROUP_PREFIX)) &&
	    !strncmp(name, "__probe_", 8))
		return strdup(name + 2);
	if (!strcmp(system, "sched")) {
		if (!strcmp(name, "pid"))
			return strdup("tid");
		if (n > 4 && !strcmp(name + n - 4, "_pid")) {
			char *out = strdup(name);
			if (out)
				memcpy(out + n - 4, "_tid", 4);
			return out;
		}
	}
	return strdup(name);
}

/* The writer's plan and the metadata's type of one raw field. */
static void field_layout(const struct tep_format_field *tf, struct rtk_field *out,
			 uint32_t *type)
{
	bool is_char = strstr(tf->type, "char") != NULL;
	out->offset = tf->offset;
	out->size = tf->size;
	out->relative = (tf->flags & TEP_FIELD_IS_RELATIVE) != 0;
	if (tf->flags & TEP_FIELD_IS_DYNAMIC) {
		out->kind = is_char ? RTK_STR_DYN : RTK_BYTES_DYN;
		*type = is_char ? RT_TYPE_STRING : RT_TYPE_BYTES;
	} else if (tf->flags & TEP_FIELD_IS_ARRAY) {
		out->kind = is_char ? RTK_STR_ARRAY : RTK_BYTES;
		*type = is_char ? RT_TYPE_STRING : RT_TYPE_BYTES;
	} else if ((tf->flags & TEP_FIELD_IS_POINTER) && tf->size == (int)sizeof(void *)) {
		out->kind = RTK_INT;
		*type = RT_TYPE_POINTER;
	} else {
		bool s = (tf->flags & TEP_FIELD_IS_SIGNED) != 0;
		out->kind = RTK_INT;
		switch (tf->size) {
		case 1: *type = s ? RT_TYPE_S8 : RT_TYPE_U8; break;
		case 2: *type = s ? RT_TYPE_S16 : RT_TYPE_U16; break;
		case 4: *type = s ? RT_TYPE_S32 : RT_TYPE_U32; break;
		case 8: *type = s ? RT_TYPE_S64 : RT_TYPE_U64; break;
		default:
			out->kind = RTK_BYTES;
			*type = RT_TYPE_BYTES;
		}
	}
}

/* The raw field `name` of the event into *out (size 0 when the event has
 * none, or it is not an int of `isize` bytes, or not a string, as asked:
 * isize 0 is a string). */
static void role_field(struct tep_event *ev, const char *name, int isize, struct rtk_field *out)
{
	struct tep_format_field *tf = tep_find_field(ev, name);
	uint32_t type;
	memset(out, 0, sizeof(*out));
	if (!tf)
		return;
	field_layout(tf, out, &type);
	bool str = out->kind == RTK_STR_ARRAY || out->kind == RTK_STR_DYN;
	if (isize ? (out->kind != RTK_INT || out->size != isize) : !str)
		memset(out, 0, sizeof(*out));
}

static void who_fields(struct tep_event *ev, struct rtk_who *w, const char *tid,
		       const char *comm, const char *prio)
{
	role_field(ev, tid, 4, &w->tid);
	if (comm)
		role_field(ev, comm, 0, &w->comm);
	if (prio)
		role_field(ev, prio, 4, &w->prio);
}

/* What the event tells the process table (kernel_internal.h). */
static void class_role(struct rtk_class *c, const char *system, struct tep_event *ev)
{
	const char *e = ev->name;
	c->role = RTK_ROLE_NONE;
	if (!strcmp(system, "sched") && !strcmp(e, "sched_switch")) {
		c->role = RTK_ROLE_SWITCH;
		who_fields(ev, &c->who[0], "prev_pid", "prev_comm", "prev_prio");
		who_fields(ev, &c->who[1], "next_pid", "next_comm", "next_prio");
	} else if (!strcmp(system, "sched") && (!strcmp(e, "sched_waking") ||
						!strcmp(e, "sched_wakeup") ||
						!strcmp(e, "sched_wakeup_new"))) {
		c->role = RTK_ROLE_WAKE;
		who_fields(ev, &c->who[1], "pid", "comm", "prio");
	} else if (!strcmp(system, "sched") && !strcmp(e, "sched_pi_setprio")) {
		c->role = RTK_ROLE_PRIO;
		who_fields(ev, &c->who[1], "pid", NULL, NULL);
		role_field(ev, "newprio", 4, &c->aux);
	} else if (!strcmp(system, "sched") && !strcmp(e, "sched_process_fork")) {
		c->role = RTK_ROLE_FORK;
		who_fields(ev, &c->who[0], "parent_pid", "parent_comm", NULL);
		who_fields(ev, &c->who[1], "child_pid", "child_comm", NULL);
	} else if (!strcmp(system, "sched") && !strcmp(e, "sched_process_exec")) {
		c->role = RTK_ROLE_EXEC;
		who_fields(ev, &c->who[1], "pid", NULL, NULL);
		role_field(ev, "old_pid", 4, &c->aux);
		role_field(ev, "filename", 0, &c->filename);
	} else if (!strcmp(system, "sched") && !strcmp(e, "sched_process_free")) {
		c->role = RTK_ROLE_FREE;
		who_fields(ev, &c->who[1], "pid", NULL, NULL);
	} else if (!strcmp(system, "task") && !strcmp(e, "task_newtask")) {
		c->role = RTK_ROLE_NEWTASK;
		who_fields(ev, &c->who[1], "pid", "comm", NULL);
		role_field(ev, "clone_flags", 8, &c->aux);
	} else if (!strcmp(system, "task") && !strcmp(e, "task_rename")) {
		c->role = RTK_ROLE_RENAME;
		who_fields(ev, &c->who[1], "pid", "newcomm", NULL);
	}
}

/* The sched events' priorities, which LTTng writes as p->prio -
 * MAX_RT_PRIO (lttng-modules' instrumentation/events/sched.h: sched_switch's
 * prev_prio and next_prio, the prio of sched_waking, _wakeup, _wakeup_new,
 * _migrate_task, _process_free, _process_exit, _process_wait, _wait_task,
 * sched_pi_setprio's oldprio and newprio). */
static bool lttng_prio(const char *system, const char *field)
{
	static const char *const names[] = { "prio", "prev_prio", "next_prio", "oldprio",
					     "newprio" };
	if (strcmp(system, "sched"))
		return false;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(field, names[i]))
			return true;
	return false;
}

/* Whether ftrace field tf is a priority LTTng's traces rebase (written
 * minus RTK_PRIO_OFFSET): a 32-bit scalar of lttng_prio's list. */
static bool rebased_prio(const char *system, const struct tep_format_field *tf)
{
	return lttng_prio(system, tf->name) && tf->size == 4 &&
	       !(tf->flags & (TEP_FIELD_IS_ARRAY | TEP_FIELD_IS_DYNAMIC | TEP_FIELD_IS_STRING));
}

static int build_class(struct rtk_class *c, const char *system, struct tep_event *ev)
{
	int syscall;
	c->ftrace_id = ev->id;
	c->name = class_name(system, ev->name, &syscall);
	struct tep_format_field *pid = tep_find_common_field(ev, "common_pid");
	c->pid_offset = pid && pid->size == 4 ? pid->offset : -1;
	class_role(c, system, ev);
	uint32_t n = 0;
	for (struct tep_format_field *tf = ev->format.fields; tf; tf = tf->next)
		n++;
	c->fields = calloc(n + 1, sizeof(*c->fields));
	c->descs = calloc(n + 1, sizeof(*c->descs));
	c->names = calloc(n + 1, sizeof(*c->names));
	if (!c->name || !c->fields || !c->descs || !c->names)
		return -ENOMEM;
	for (struct tep_format_field *tf = ev->format.fields; tf; tf = tf->next) {
		if (syscall && !strcmp(tf->name, "__syscall_nr"))
			continue;
		uint32_t k = c->nr_fields;
		field_layout(tf, &c->fields[k], &c->descs[k].type);
		if (rebased_prio(system, tf) && c->fields[k].kind == RTK_INT) {
			c->fields[k].kind = RTK_PRIO;
			c->descs[k].type = RT_TYPE_S32;
		}
		c->descs[k].name = c->names[k] = field_name(system, tf->name);
		c->nr_fields++;
		if (!c->names[k])
			return -ENOMEM;
	}
	return 0;
}

static int format_id(const char *text, size_t len)
{
	for (const char *p = text; p && p < text + len; p = memchr(p, '\n', (size_t)(text + len - p))) {
		while (p < text + len && *p == '\n')
			p++;
		int id;
		if (!strncmp(p, "ID:", 3) && sscanf(p + 3, "%d", &id) == 1)
			return id;
	}
	return -1;
}

int rtk_formats_add(struct rtk_formats *f, const char *system, const char *text, size_t len)
{
	int id = format_id(text, len);
	if (id < 0 || id >= RTK_MAX_IDS)
		return -EINVAL;
	if (f->by_id[id])
		return -EEXIST;
	if (tep_parse_event(f->tep, text, len, system) != 0)
		return -EINVAL;
	struct tep_event *ev = tep_find_event(f->tep, id);
	if (!ev)
		return -EINVAL;
	if (RT_ARRAY_GROW(f->classes, f->cap, f->nr + 1, 64) < 0)
		return -ENOMEM;
	struct rtk_class *c = &f->classes[f->nr];
	memset(c, 0, sizeof(*c));
	c->ctf_id = (uint32_t)f->nr;
	int ret = build_class(c, system, ev);
	if (ret < 0) {
		free_class(c);
		return ret;
	}
	f->by_id[id] = (uint32_t)++f->nr;
	return 0;
}

/* Whether tf holds text (char arrays, __data_loc char[]). */
static bool is_text(const struct tep_format_field *tf)
{
	return strstr(tf->type, "char") &&
	       (tf->flags & (TEP_FIELD_IS_ARRAY | TEP_FIELD_IS_DYNAMIC | TEP_FIELD_IS_STRING));
}

int rtk_formats_ftrace_field(const struct rtk_formats *f, size_t i, const char *name,
			     const char **ftrace_name, bool *text, int64_t *offset)
{
	const struct rtk_class *c = rtk_formats_class(f, i);
	struct tep_event *ev = c ? tep_find_event(f->tep, c->ftrace_id) : NULL;
	if (!ev)
		return -ENOENT;
	struct tep_format_field *found = NULL;
	for (struct tep_format_field *tf = ev->format.fields; tf && !found; tf = tf->next) {
		char *ctf = field_name(ev->system, tf->name);
		if (!ctf)
			return -ENOMEM;
		if (!strcmp(ctf, name))
			found = tf;
		free(ctf);
	}
	/* ftrace's own names: prev_pid, common_pid, __syscall_nr, ... */
	if (!found)
		found = tep_find_any_field(ev, name);
	if (!found)
		return -ENOENT;
	*ftrace_name = found->name;
	*text = is_text(found);
	*offset = rebased_prio(ev->system, found) ? RTK_PRIO_OFFSET : 0;
	return 0;
}

/* One field of a state dump class: `size` bytes at `offset` of the
 * dump's record (kernel_internal.h). */
struct dump_field {
	const char *name;
	enum rtk_field_kind kind;
	int offset, size;
	uint32_t type;
};

#define DUMP_FIELD_OF(type, n, member, k, t)                                          \
	{ n, k, (int)offsetof(type, member), (int)sizeof(((type *)0)->member), t }
#define DUMP_FIELD(n, member, k, t) DUMP_FIELD_OF(struct rtk_dump_process, n, member, k, t)
#define NS_FIELD(n, member, t) DUMP_FIELD_OF(struct rtk_dump_pid_ns, n, member, RTK_INT, t)

static const struct dump_field process_fields[] = {
	DUMP_FIELD("tid", tid, RTK_INT, RT_TYPE_S32),
	DUMP_FIELD("pid", pid, RTK_INT, RT_TYPE_S32),
	DUMP_FIELD("ppid", ppid, RTK_INT, RT_TYPE_S32),
	DUMP_FIELD("name", name, RTK_STR_ARRAY, RT_TYPE_STRING),
	DUMP_FIELD("type", type, RTK_INT, RT_TYPE_S32),
	DUMP_FIELD("mode", mode, RTK_INT, RT_TYPE_S32),
	DUMP_FIELD("submode", submode, RTK_INT, RT_TYPE_S32),
	DUMP_FIELD("status", status, RTK_INT, RT_TYPE_S32),
	DUMP_FIELD("cpu", cpu, RTK_INT, RT_TYPE_U32),
};

static const struct dump_field pid_ns_fields[] = {
	NS_FIELD("tid", tid, RT_TYPE_S32),
	NS_FIELD("vtid", vtid, RT_TYPE_S32),
	NS_FIELD("vpid", vpid, RT_TYPE_S32),
	NS_FIELD("vppid", vppid, RT_TYPE_S32),
	NS_FIELD("ns_level", ns_level, RT_TYPE_S32),
	NS_FIELD("ns_inum", ns_inum, RT_TYPE_U32),
};

/* Append a state dump class of kind `kind`. */
static int add_dump_class(struct rtk_formats *f, uint32_t kind, const char *name,
			  const struct dump_field *df, uint32_t n, int pid_offset)
{
	if (RT_ARRAY_GROW(f->classes, f->cap, f->nr + 1, 64) < 0)
		return -ENOMEM;
	struct rtk_class *c = &f->classes[f->nr];
	memset(c, 0, sizeof(*c));
	c->ftrace_id = -1;
	c->ctf_id = (uint32_t)f->nr;
	c->pid_offset = pid_offset;
	c->name = strdup(name);
	c->fields = calloc(n + 1, sizeof(*c->fields));
	c->descs = calloc(n + 1, sizeof(*c->descs));
	c->names = calloc(n + 1, sizeof(*c->names));
	if (!c->name || !c->fields || !c->descs || !c->names)
		goto nomem;
	for (uint32_t k = 0; k < n; k++) {
		c->fields[k] = (struct rtk_field){ .kind = df[k].kind,
						   .offset = f->dump_base + df[k].offset,
						   .size = df[k].size };
		c->descs[k].type = df[k].type;
		c->descs[k].name = c->names[k] = strdup(df[k].name);
		c->nr_fields++;
		if (!c->names[k])
			goto nomem;
	}
	if (kind == RTK_DUMP_PROCESS) {
		struct rtk_who *w = &c->who[1];
		c->role = RTK_ROLE_DUMP;
		w->tid = c->fields[0];
		w->pid = c->fields[1];
		w->comm = c->fields[3];
		w->prio = (struct rtk_field){ .kind = RTK_INT, .size = 4,
					      .offset = f->dump_base +
							(int)offsetof(struct rtk_dump_process, prio) };
	}
	f->dump_class[kind] = (uint32_t)++f->nr;
	return 0;
nomem:
	free_class(c);
	return -ENOMEM;
}

void rtk_formats_hide_last(struct rtk_formats *f)
{
	if (f->nr)
		f->classes[f->nr - 1].hidden = true;
}

int rtk_formats_dump_layout(const struct rtk_formats *f, int *type, int *base)
{
	if (f->dump_type < 0)
		return -ENOENT;
	*type = f->dump_type;
	*base = f->dump_base;
	return 0;
}

int rtk_formats_add_statedump(struct rtk_formats *f, const char *text, size_t len)
{
	int id = format_id(text, len);
	if (id < 0 || id >= RTK_MAX_IDS)
		return -EINVAL;
	if (f->by_id[id] || f->dump_type >= 0)
		return -EEXIST;
	if (tep_parse_event(f->tep, text, len, "ftrace") != 0)
		return -EINVAL;
	struct tep_event *ev = tep_find_event(f->tep, id);
	struct tep_format_field *idf = ev ? tep_find_field(ev, "id") : NULL;
	struct tep_format_field *buf = ev ? tep_find_field(ev, "buf") : NULL;
	struct tep_format_field *pid = ev ? tep_find_common_field(ev, "common_pid") : NULL;
	if (!idf || !buf || idf->size != 4 || buf->offset != idf->offset + 4 || !pid ||
	    pid->size != 4)
		return -EINVAL;
	f->dump_type = id;
	f->dump_base = idf->offset;
	int ret = add_dump_class(f, RTK_DUMP_START, "lttng_statedump_start", NULL, 0,
				 pid->offset);
	if (!ret)
		ret = add_dump_class(f, RTK_DUMP_END, "lttng_statedump_end", NULL, 0, pid->offset);
	if (!ret)
		ret = add_dump_class(f, RTK_DUMP_PROCESS, "lttng_statedump_process_state",
				     process_fields,
				     sizeof(process_fields) / sizeof(process_fields[0]),
				     pid->offset);
	if (!ret)
		ret = add_dump_class(f, RTK_DUMP_PID_NS, "lttng_statedump_process_pid_ns",
				     pid_ns_fields,
				     sizeof(pid_ns_fields) / sizeof(pid_ns_fields[0]), pid->offset);
	return ret;
}

int rtk_formats_ctf_events(const struct rtk_formats *f, size_t from,
			   struct ctf_event_class **ev, uint32_t *nr)
{
	*ev = calloc(f->nr > from ? f->nr - from : 1, sizeof(**ev));
	if (!*ev)
		return -ENOMEM;
	uint32_t k = 0;
	for (size_t i = from; i < f->nr; i++) {
		const struct rtk_class *c = &f->classes[i];
		if (c->hidden)
			continue;
		(*ev)[k] = (struct ctf_event_class){ .id = c->ctf_id, .stream_id = 0,
						     .provider = NULL, .name = c->name,
						     .loglevel = -1, .nr_fields = c->nr_fields,
						     .fields = c->descs };
		k++;
	}
	*nr = k;
	return 0;
}
