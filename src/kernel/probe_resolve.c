/*
 * probe_resolve.c - where a user-space probe goes and what it captures
 * (kernel_internal.h's rtk_probe_resolve), read with elfutils:
 *  - elf:PATH:FUNC[%return]: the function's symbol (the binary's .symtab,
 *    else its separate debug file, found by build id or .gnu_debuglink
 *    by libdwfl's standard search under the debug root (beside the
 *    binary, in its .debug, under rt_debug_dir(): /usr/lib/debug or
 *    RINGTRACE_DEBUG_DIR), else .dynsym) turned into a file
 *    offset through the PT_LOAD segment that holds it; its parameters
 *    from DWARF (names, sizes, signs) when there is debug information,
 *    else the six argument registers as arg1..arg6;
 *  - sdt:PATH:PROVIDER:NAME: the probe's .note.stapsdt note (its address
 *    adjusted by .stapsdt.base as systemtap's <sys/sdt.h> lays it out,
 *    its semaphore as the uprobe's reference counter, its arguments'
 *    operands translated into uprobe fetch arguments).
 * x86-64 only: the System V calling convention's integer registers.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <gelf.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/debug_dir.h"
#include "kernel_internal.h"

/* The System V x86-64 integer argument registers, as uprobe fetch
 * arguments name them. */
static const char *const arg_regs[] = { "di", "si", "dx", "cx", "r8", "r9" };
#define NR_ARG_REGS (sizeof(arg_regs) / sizeof(arg_regs[0]))

/* Append to the site's fetch arguments; -E2BIG when they do not fit. */
static int add_arg(struct rtk_probe_site *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int add_arg(struct rtk_probe_site *s, const char *fmt, ...)
{
	size_t n = strlen(s->args);
	va_list ap;
	va_start(ap, fmt);
	int w = vsnprintf(s->args + n, sizeof(s->args) - n, fmt, ap);
	va_end(ap);
	if (w < 0 || (size_t)w >= sizeof(s->args) - n) {
		s->args[n] = '\0';
		return -E2BIG;
	}
	return 0;
}

/* The file offset of link-time address `addr`: the PT_LOAD segment that
 * holds it (its file part). 0 and *off, or -ENOENT. */
static int file_offset(Elf *elf, uint64_t addr, uint64_t *off)
{
	size_t n;
	if (elf_getphdrnum(elf, &n) < 0)
		return -ENOENT;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (addr >= ph.p_vaddr && addr < ph.p_vaddr + ph.p_filesz) {
			*off = addr - ph.p_vaddr + ph.p_offset;
			return 0;
		}
	}
	return -ENOENT;
}

/* The uprobe type of an integer of `size` bytes. */
static const char *int_type(int size, bool sign)
{
	switch (size) {
	case 1: return sign ? "s8" : "u8";
	case 2: return sign ? "s16" : "u16";
	case 4: return sign ? "s32" : "u32";
	default: return sign ? "s64" : "u64";
	}
}

/* What a DWARF type is as a register argument: 1 an integer (size and
 * sign set), 0 a float (in an SSE register: no integer register used),
 * -1 anything else (a structure, long double, __int128: where its value
 * and the following arguments' go is not one register each). */
static int reg_class(Dwarf_Die *type, int *size, bool *sign)
{
	Dwarf_Die t;
	if (dwarf_peel_type(type, &t) != 0)
		return -1;
	Dwarf_Word bytes = 0;
	Dwarf_Attribute a;
	switch (dwarf_tag(&t)) {
	case DW_TAG_pointer_type:
	case DW_TAG_reference_type:
	case DW_TAG_rvalue_reference_type:
		*size = 8;
		*sign = false;
		return 1;
	case DW_TAG_enumeration_type:
	case DW_TAG_base_type:
		if (dwarf_formudata(dwarf_attr(&t, DW_AT_byte_size, &a), &bytes) != 0)
			return -1;
		break;
	default:
		return -1;
	}
	Dwarf_Word enc = DW_ATE_signed;
	if (dwarf_tag(&t) == DW_TAG_base_type &&
	    dwarf_formudata(dwarf_attr(&t, DW_AT_encoding, &a), &enc) != 0)
		return -1;
	if (enc == DW_ATE_float)
		return bytes <= 8 ? 0 : -1;
	if (bytes != 1 && bytes != 2 && bytes != 4 && bytes != 8)
		return -1;
	*size = (int)bytes;
	*sign = enc == DW_ATE_signed || enc == DW_ATE_signed_char;
	return 1;
}

/* Whether `name` can be a field of the uprobe event (an identifier not
 * among ftrace's reserved names). */
static bool good_field(const char *name)
{
	if (!name || !(isalpha((unsigned char)*name) || *name == '_') || strlen(name) > 60 ||
	    !strncmp(name, "common_", 7) || !strncmp(name, "__probe_", 8))
		return false;
	for (const char *c = name; *c; c++)
		if (!isalnum((unsigned char)*c) && *c != '_')
			return false;
	return true;
}

/* The subprogram DIE at link-time address pc, or NULL. */
static bool subprogram_at(Dwfl_Module *mod, GElf_Addr addr, Dwarf_Die *out)
{
	Dwarf_Addr bias;
	Dwarf_Die *cu = dwfl_module_addrdie(mod, addr, &bias);
	Dwarf_Die *scopes = NULL;
	int n = cu ? dwarf_getscopes(cu, addr - bias, &scopes) : 0;
	bool found = false;
	for (int i = 0; i < n && !found; i++) {
		if (dwarf_tag(&scopes[i]) == DW_TAG_subprogram) {
			*out = scopes[i];
			found = true;
		}
	}
	free(scopes);
	return found;
}

/* The capture of an entry (the parameters) or a return (the value), from
 * DWARF when the function has it, else every argument register / the
 * return register as 64-bit integers. */
static int function_args(Dwfl_Module *mod, GElf_Addr addr, struct rtk_probe_site *s)
{
	Dwarf_Die fn, child, type;
	bool dwarf = subprogram_at(mod, addr, &fn);
	int size, ret = 0;
	bool sign;
	if (s->ret) {
		if (!dwarf)
			return add_arg(s, " ret=$retval:s64");
		if (!dwarf_attr_integrate(&fn, DW_AT_type, &(Dwarf_Attribute){ 0 }))
			return 0;	/* void */
		Dwarf_Attribute a;
		if (!dwarf_formref_die(dwarf_attr_integrate(&fn, DW_AT_type, &a), &type) ||
		    reg_class(&type, &size, &sign) != 1)
			return 0;	/* not in rax as one integer */
		return add_arg(s, " ret=$retval:%s", int_type(size, sign));
	}
	if (!dwarf) {
		for (size_t i = 0; i < NR_ARG_REGS && !ret; i++)
			ret = add_arg(s, " arg%zu=%%%s:s64", i + 1, arg_regs[i]);
		return ret;
	}
	size_t reg = 0;
	if (dwarf_child(&fn, &child) != 0)
		return 0;
	do {
		if (dwarf_tag(&child) != DW_TAG_formal_parameter)
			continue;
		Dwarf_Attribute a;
		if (!dwarf_formref_die(dwarf_attr_integrate(&child, DW_AT_type, &a), &type))
			break;
		int cls = reg_class(&type, &size, &sign);
		if (cls < 0 || reg == NR_ARG_REGS)
			break;
		if (cls == 0)
			continue;
		const char *name = dwarf_diename(&child);
		char fallback[16];
		if (!good_field(name)) {
			snprintf(fallback, sizeof(fallback), "arg%zu", reg + 1);
			name = fallback;
		}
		ret = add_arg(s, " %s=%%%s:%s", name, arg_regs[reg++], int_type(size, sign));
	} while (!ret && dwarf_siblingof(&child, &child) == 0);
	return ret;
}

/* Whether the module has a full symbol table: its own .symtab, or a
 * separate debug file that was found. */
static bool has_symtab(Dwfl_Module *mod, Elf *elf)
{
	const char *debug = NULL;
	dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, NULL, &debug);
	if (debug)
		return true;
	for (Elf_Scn *scn = elf_nextscn(elf, NULL); scn; scn = elf_nextscn(elf, scn)) {
		GElf_Shdr sh;
		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB)
			return true;
	}
	return false;
}

/* The symbol `name` defined in the module: a function (func), else a
 * variable (an object or an untyped symbol, not thread-local). 0 with
 * *sym and *addr (libdwfl's address), or -ENOENT. Loads the debug file
 * (build id, .gnu_debuglink) when the binary has no .symtab of its own. */
static int find_symbol(Dwfl_Module *mod, const char *name, bool func, GElf_Sym *sym,
		       GElf_Addr *addr)
{
	int n = dwfl_module_getsymtab(mod);
	for (int i = 1; i < n; i++) {
		const char *s = dwfl_module_getsym_info(mod, i, sym, addr, NULL, NULL, NULL);
		int type = GELF_ST_TYPE(sym->st_info);
		if (!s || strcmp(s, name) || sym->st_shndx == SHN_UNDEF)
			continue;
		if (func ? type == STT_FUNC || type == STT_GNU_IFUNC
			 : type == STT_OBJECT || type == STT_NOTYPE)
			return 0;
	}
	return -ENOENT;
}

static int resolve_function(Dwfl_Module *mod, Elf *elf, const char *path, const char *func,
			    struct rtk_probe_site *s, char *err, size_t errlen)
{
	GElf_Sym sym;
	GElf_Addr addr;
	if (find_symbol(mod, func, true, &sym, &addr) == 0) {
		if (file_offset(elf, sym.st_value, &s->offset) < 0) {
			rt_errf(err, errlen, "%s: function %s at 0x%" PRIx64 " is in no loaded "
				"segment of the file", path, func, (uint64_t)sym.st_value);
			return -ENOENT;
		}
		int ret = function_args(mod, addr, s);
		if (ret < 0)
			rt_errf(err, errlen, "%s: too many arguments to capture for %s", path, func);
		return ret;
	}
	if (!has_symtab(mod, elf))
		rt_errf(err, errlen, "%s has no function %s in its dynamic symbols, and it is "
			"stripped without a debug file found (by build id or .gnu_debuglink, "
			"beside it or under %s)", path, func, rt_debug_dir());
	else
		rt_errf(err, errlen, "%s has no function %s", path, func);
	return -ENOENT;
}

/* A variable's operand, "SYMBOL[+-N](%rip)" (how gcc writes a global or
 * static variable's "m" operand on x86-64), as a uprobe fetch argument:
 * the memory at @+OFFSET, which the kernel takes as the probe's address
 * plus OFFSET minus the probe's file offset (trace_uprobe.c,
 * translate_user_vaddr), so OFFSET is the variable's link-time address
 * minus `delta` (the probe's link-time address minus its file offset):
 * right for .bss too, which has no bytes in the file. False when the
 * operand is not of that form or names no variable of the module. */
static bool sdt_symbol_operand(Dwfl_Module *mod, int64_t delta, const char *op, char *out,
			       size_t len)
{
	const char *paren = strchr(op, '(');
	if (!paren || strcmp(paren, "(%rip)"))
		return false;
	char name[128];
	size_t nl = strcspn(op, "+-(");
	if (nl == 0 || nl >= sizeof(name) || !(isalpha((unsigned char)op[0]) || op[0] == '_' ||
					       op[0] == '.'))
		return false;
	memcpy(name, op, nl);
	name[nl] = '\0';
	long long add = 0;
	if (op + nl != paren) {
		char *end;
		add = strtoll(op + nl, &end, 0);
		if (end != paren)
			return false;
	}
	GElf_Sym sym;
	GElf_Addr addr;
	if (find_symbol(mod, name, false, &sym, &addr) < 0)
		return false;
	/* Unsigned (wrapping) arithmetic: a note or symbol table that
	 * makes no sense gives an offset past INT64_MAX, refused. */
	uint64_t off = sym.st_value + (uint64_t)add - (uint64_t)delta;
	return off <= INT64_MAX && snprintf(out, len, "@+0x%" PRIx64, off) < (int)len;
}

/* An SDT argument's operand (AT&T syntax, as gcc writes it in the note)
 * as a uprobe fetch argument: a register, a register plus displacement
 * (stack slots), a constant, a variable (sdt_symbol_operand); false when
 * it has no translation (an indexed address, "(%rax,%rdx,8)", which a
 * uprobe cannot compute, or an offset from %rip without a symbol). */
static bool sdt_operand(Dwfl_Module *mod, int64_t delta, const char *op, char *out,
			size_t len)
{
	static const char *const regs[][5] = {
		{ "ax", "rax", "eax", "al", "ah" }, { "bx", "rbx", "ebx", "bl", "bh" },
		{ "cx", "rcx", "ecx", "cl", "ch" }, { "dx", "rdx", "edx", "dl", "dh" },
		{ "si", "rsi", "esi", "sil", "si" }, { "di", "rdi", "edi", "dil", "di" },
		{ "bp", "rbp", "ebp", "bpl", "bp" }, { "sp", "rsp", "esp", "spl", "sp" },
	};
	char reg[8];
	long disp = 0;
	const char *r = op;
	if (*op == '$') {
		char *end;
		long long v = strtoll(op + 1, &end, 0);
		return !*end && end != op + 1 && snprintf(out, len, "\\%lld", v) < (int)len;
	}
	if (*op != '%' && !isdigit((unsigned char)*op) && *op != '-' && *op != '+')
		return sdt_symbol_operand(mod, delta, op, out, len);
	if (*op != '%') {
		char *end;
		disp = strtol(op, &end, 0);
		if (*end != '(' || end[1] != '%')
			return false;
		r = end + 1;
	}
	size_t rl = strcspn(r + 1, ")");
	if (rl == 0 || rl >= sizeof(reg) || (*op != '%' && strcmp(r + 1 + rl, ")")) ||
	    (*op == '%' && r[1 + rl]))
		return false;
	memcpy(reg, r + 1, rl);
	reg[rl] = '\0';
	const char *name = NULL;
	for (size_t i = 0; i < sizeof(regs) / sizeof(regs[0]) && !name; i++)
		for (size_t k = 0; k < 5; k++)
			if (!strcmp(reg, regs[i][k]))
				name = regs[i][0];
	char r8[4];
	if (!name && reg[0] == 'r' && isdigit((unsigned char)reg[1])) {
		long v = strtol(reg + 1, NULL, 10);
		if (v < 8 || v > 15)
			return false;
		snprintf(r8, sizeof(r8), "r%ld", v);
		name = r8;
	}
	if (!name)
		return false;
	int w = *op == '%' ? snprintf(out, len, "%%%s", name)
			   : snprintf(out, len, "%+ld(%%%s)", disp, name);
	return w > 0 && w < (int)len;
}

/* The note's arguments ("SIZE@OPERAND ..."), each that translates as
 * argN (N its position from 1); delta: sdt_symbol_operand's. */
static int sdt_args(Dwfl_Module *mod, int64_t delta, const char *text,
		    struct rtk_probe_site *s)
{
	unsigned pos = 0;
	const char *p = text;
	while (*p) {
		while (*p == ' ')
			p++;
		if (!*p)
			break;
		char tok[128];
		size_t n = strcspn(p, " ");
		snprintf(tok, sizeof(tok), "%.*s", (int)(n < sizeof(tok) ? n : sizeof(tok) - 1), p);
		p += n;
		pos++;
		char *at = strchr(tok, '@'), fetch[96];
		if (!at)
			continue;
		long size = strtol(tok, NULL, 10);
		bool sign = size < 0;
		size = labs(size);
		if ((size != 1 && size != 2 && size != 4 && size != 8) ||
		    !sdt_operand(mod, delta, at + 1, fetch, sizeof(fetch)))
			continue;
		int ret = add_arg(s, " arg%u=%s:%s", pos, fetch, int_type((int)size, sign));
		if (ret < 0)
			return ret;
	}
	return 0;
}

/* The link-time address of section `name`, or 0. */
static uint64_t section_addr(Elf *elf, const char *name)
{
	size_t shstrndx;
	if (elf_getshdrstrndx(elf, &shstrndx) < 0)
		return 0;
	for (Elf_Scn *scn = elf_nextscn(elf, NULL); scn; scn = elf_nextscn(elf, scn)) {
		GElf_Shdr sh;
		const char *n = gelf_getshdr(scn, &sh) ? elf_strptr(elf, shstrndx, sh.sh_name) : NULL;
		if (n && !strcmp(n, name))
			return sh.sh_addr;
	}
	return 0;
}

/*
 * One stapsdt note (type 3, name "stapsdt"), as <sys/sdt.h> writes it,
 * with 8-byte addresses in an ELFCLASS64 file:
 *   u64 pc         the probe's address (link time, before .stapsdt.base's
 *                  adjustment)
 *   u64 base       .stapsdt.base's address as the note was written
 *   u64 semaphore  its unsigned short counter's address, 0: none
 *   provider\0 name\0 arguments\0
 */
static int resolve_sdt(Dwfl_Module *mod, Elf *elf, const char *path, const char *provider, const char *name,
		       struct rtk_probe_site *s, char *err, size_t errlen)
{
	uint64_t base_now = section_addr(elf, ".stapsdt.base");
	for (Elf_Scn *scn = elf_nextscn(elf, NULL); scn; scn = elf_nextscn(elf, scn)) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		GElf_Nhdr nh;
		size_t off = 0, name_off, desc_off;
		while (d && (off = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
			const char *desc = (const char *)d->d_buf + desc_off;
			if (nh.n_type != 3 || nh.n_namesz != 8 ||
			    memcmp((const char *)d->d_buf + name_off, "stapsdt", 8) ||
			    nh.n_descsz < 3 * 8 + 3 || desc[nh.n_descsz - 1] != '\0')
				continue;
			uint64_t pc, base, sem;
			memcpy(&pc, desc, 8);
			memcpy(&base, desc + 8, 8);
			memcpy(&sem, desc + 16, 8);
			const char *prov = desc + 24, *end = desc + nh.n_descsz;
			const char *nm = prov + strnlen(prov, (size_t)(end - prov)) + 1;
			if (nm >= end)
				continue;
			const char *args = nm + strnlen(nm, (size_t)(end - nm)) + 1;
			if (strcmp(prov, provider) || strcmp(nm, name))
				continue;
			if (base && base_now) {
				pc += base_now - base;
				sem = sem ? sem + (base_now - base) : 0;
			}
			if (file_offset(elf, pc, &s->offset) < 0 ||
			    (sem && file_offset(elf, sem, &s->ref_ctr) < 0)) {
				rt_errf(err, errlen, "%s: the SDT probe %s:%s points outside the "
					"file's segments", path, provider, name);
				return -EINVAL;
			}
			int ret = args < end ? sdt_args(mod, (int64_t)(pc - s->offset), args, s)
					     : 0;
			if (ret < 0)
				rt_errf(err, errlen, "%s: too many arguments to capture for %s:%s",
					path, provider, name);
			return ret;
		}
	}
	rt_errf(err, errlen, "%s has no SDT probe %s:%s (no such .note.stapsdt note)", path,
		provider, name);
	return -ENOENT;
}

/* Split "elf:PATH:FUNC[%return]" / "sdt:PATH:PROVIDER:NAME" into s->path
 * (as given) and the parts (pointing into `copy`). */
static int parse_spec(const char *spec, char *copy, size_t len, bool *sdt, const char **func,
		      const char **provider, struct rtk_probe_site *s, char *err, size_t errlen)
{
	if (strlen(spec) >= len) {
		rt_errf(err, errlen, "probe '%.64s...' is too long", spec);
		return -EINVAL;
	}
	strcpy(copy, spec);
	*sdt = !strncmp(copy, "sdt:", 4);
	if (!*sdt && strncmp(copy, "elf:", 4)) {
		rt_errf(err, errlen, "probe '%s' is neither elf:PATH:FUNCTION nor "
			"sdt:PATH:PROVIDER:NAME", spec);
		return -EINVAL;
	}
	char *last = strrchr(copy + 4, ':');
	char *prev = NULL;
	if (last && *sdt) {
		*last = '\0';
		prev = strrchr(copy + 4, ':');
		*last = ':';
	}
	if (!last || last[1] == '\0' || last == copy + 4 || (*sdt && (!prev || prev == copy + 4 ||
							      prev + 1 == last))) {
		rt_errf(err, errlen, "probe '%s': expected %s", spec,
			*sdt ? "sdt:PATH:PROVIDER:NAME" : "elf:PATH:FUNCTION[%return]");
		return -EINVAL;
	}
	*last = '\0';
	*func = last + 1;
	if (*sdt) {
		*prev = '\0';
		*provider = prev + 1;
	} else {
		char *pct = strchr(last + 1, '%');
		if (pct && strcmp(pct, "%return")) {
			rt_errf(err, errlen, "probe '%s': after the function, only %%return (a "
				"return probe)", spec);
			return -EINVAL;
		}
		if (pct) {
			*pct = '\0';
			s->ret = true;
		}
	}
	const char *path = copy + 4;
	for (const char *c = path; *c; c++) {
		if (isspace((unsigned char)*c) || !isprint((unsigned char)*c)) {
			rt_errf(err, errlen, "probe '%s': the path has a space or a control "
				"character, which uprobe_events cannot take", spec);
			return -EINVAL;
		}
	}
	if (path[0] != '/') {
		rt_errf(err, errlen, "probe '%s': the path must be absolute", spec);
		return -EINVAL;
	}
	return 0;
}

int rtk_probe_resolve(const char *spec, struct rtk_probe_site *s, char *err, size_t errlen)
{
	char copy[PATH_MAX + 512];
	const char *func = NULL, *provider = NULL;
	bool sdt;
	memset(s, 0, sizeof(*s));
	int ret = parse_spec(spec, copy, sizeof(copy), &sdt, &func, &provider, s, err, errlen);
	if (ret < 0)
		return ret;
	const char *given = copy + 4;
	if (!realpath(given, s->path) || access(s->path, R_OK) < 0) {
		ret = -errno;
		rt_errf(err, errlen, "probe '%s': %s: %s", spec, given, strerror(errno));
		return ret;
	}
	if (rt_debug_dir_check() < 0) {
		rt_errf(err, errlen, "probe '%s': %s must be an absolute path without ':'",
			spec, RT_DEBUG_DIR_ENV);
		return -EINVAL;
	}
	/* libdwfl's search path: the binary's directory, its .debug, the
	 * debug root (where it looks for .build-id/NN/REST.debug too). */
	char search[PATH_MAX + 16];
	if (snprintf(search, sizeof(search), ":.debug:%s", rt_debug_dir()) >=
	    (int)sizeof(search)) {
		rt_errf(err, errlen, "probe '%s': %s is too long", spec, RT_DEBUG_DIR_ENV);
		return -ENAMETOOLONG;
	}
	char *search_path = search;
	const Dwfl_Callbacks callbacks = {
		.find_elf = dwfl_build_id_find_elf,
		.find_debuginfo = dwfl_standard_find_debuginfo,
		.section_address = dwfl_offline_section_address,
		.debuginfo_path = &search_path,
	};
	elf_version(EV_CURRENT);
	Dwfl *dwfl = dwfl_begin(&callbacks);
	if (!dwfl) {
		rt_errf(err, errlen, "libdwfl: %s", dwfl_errmsg(-1));
		return -ENOMEM;
	}
	Dwfl_Module *mod = dwfl_report_offline(dwfl, s->path, s->path, -1);
	dwfl_report_end(dwfl, NULL, NULL);
	GElf_Addr bias;
	Elf *elf = mod ? dwfl_module_getelf(mod, &bias) : NULL;
	GElf_Ehdr eh;
	if (!elf || !gelf_getehdr(elf, &eh)) {
		rt_errf(err, errlen, "probe '%s': %s is not an ELF file", spec, given);
		ret = -ENOEXEC;
		goto out;
	}
	if (eh.e_machine != EM_X86_64 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    (eh.e_type != ET_EXEC && eh.e_type != ET_DYN)) {
		rt_errf(err, errlen, "probe '%s': %s is not an x86-64 executable or shared "
			"library", spec, given);
		ret = -ENOEXEC;
		goto out;
	}
	ret = sdt ? resolve_sdt(mod, elf, given, provider, func, s, err, errlen)
		  : resolve_function(mod, elf, given, func, s, err, errlen);
out:
	dwfl_end(dwfl);
	return ret;
}
