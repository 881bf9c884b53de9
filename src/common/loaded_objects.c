/*
 * loaded_objects.c - the objects loaded in this process
 * (loaded_objects.h).
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include "array.h"
#include "loaded_objects.h"

/* Sections, section names and the debug link section read at most. */
#define MAX_SECTIONS 4096
#define SHSTRTAB_MAX (1u << 20)
#define DEBUGLINK_MAX 4096

/* The NT_GNU_BUILD_ID note among the object's PT_NOTE segments, in
 * memory (they are loaded), bounded by each segment's size. */
static void note_build_id(const struct dl_phdr_info *info, struct rt_loaded_obj *o)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_NOTE)
			continue;
		const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
		size_t left = ph->p_memsz, align = ph->p_align == 8 ? 8 : 4;
		while (left >= sizeof(ElfW(Nhdr))) {
			ElfW(Nhdr) nh;
			memcpy(&nh, p, sizeof(nh));
			size_t namesz = (nh.n_namesz + align - 1) & ~(align - 1);
			size_t descsz = (nh.n_descsz + align - 1) & ~(align - 1);
			if (namesz > left - sizeof(nh) || descsz > left - sizeof(nh) - namesz)
				break;
			const uint8_t *name = p + sizeof(nh), *desc = name + namesz;
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    !memcmp(name, "GNU", 4) && nh.n_descsz > 0 &&
			    nh.n_descsz <= RT_BUILD_ID_MAX) {
				memcpy(o->build_id, desc, nh.n_descsz);
				o->build_id_len = nh.n_descsz;
				return;
			}
			p += sizeof(nh) + namesz + descsz;
			left -= sizeof(nh) + namesz + descsz;
		}
	}
}

/* dl_iterate_phdr's callback: one object (or, with l->only, the one
 * holding that address). Nothing but copies from memory here: files are
 * read afterwards, outside the loader's lock. */
static int collect(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct rt_loaded_list *l = arg;
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		if (info->dlpi_addr + ph->p_vaddr < lo)
			lo = info->dlpi_addr + ph->p_vaddr;
		if (info->dlpi_addr + ph->p_vaddr + ph->p_memsz > hi)
			hi = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
	}
	if (lo >= hi || (l->only && (l->only < lo || l->only >= hi)))
		return 0;
	/* The vdso has no file to resolve symbols in. */
	if (info->dlpi_addr && info->dlpi_addr == getauxval(AT_SYSINFO_EHDR))
		return 0;
	if (l->nr >= RT_LOADED_MAX_OBJECTS || RT_ARRAY_GROW(l->v, l->cap, l->nr + 1, 32) < 0)
		return 1;
	struct rt_loaded_obj *o = &l->v[l->nr];
	memset(o, 0, sizeof(*o));
	o->baddr = lo;
	o->memsz = hi - lo;
	o->is_pic = info->dlpi_addr != 0;
	const char *name = info->dlpi_name;
	if (!name || !*name) {
		/* The main program (glibc gives it no name). */
		ssize_t n = readlink("/proc/self/exe", o->path, sizeof(o->path) - 1);
		o->path[n > 0 ? n : 0] = '\0';
	} else {
		snprintf(o->path, sizeof(o->path), "%s", name);
	}
	note_build_id(info, o);
	l->nr++;
	return l->only ? 1 : 0;
}

static bool read_exact(int fd, void *buf, size_t len, uint64_t off)
{
	return pread(fd, buf, len, (off_t)off) == (ssize_t)len;
}

/* The object's .gnu_debuglink (file name, then padding to 4 bytes, then
 * the CRC-32 of the debug file), from its section headers. A file that
 * cannot be read, or is not a 64-bit ELF file, has none. */
static void read_debug_link(struct rt_loaded_obj *o)
{
	if (o->path[0] != '/')
		return;
	int fd = open(o->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return;
	struct stat st;
	Elf64_Ehdr eh;
	Elf64_Shdr *sh = NULL;
	char *names = NULL;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || !read_exact(fd, &eh, sizeof(eh), 0) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shnum == 0 ||
	    eh.e_shnum > MAX_SECTIONS || eh.e_shstrndx >= eh.e_shnum)
		goto out;
	sh = calloc(eh.e_shnum, sizeof(*sh));
	if (!sh || !read_exact(fd, sh, (size_t)eh.e_shnum * sizeof(*sh), eh.e_shoff))
		goto out;
	const Elf64_Shdr *ss = &sh[eh.e_shstrndx];
	if (ss->sh_size == 0 || ss->sh_size > SHSTRTAB_MAX)
		goto out;
	names = malloc(ss->sh_size + 1);
	if (!names || !read_exact(fd, names, ss->sh_size, ss->sh_offset))
		goto out;
	names[ss->sh_size] = '\0';
	for (unsigned i = 0; i < eh.e_shnum; i++) {
		if (sh[i].sh_name >= ss->sh_size ||
		    strcmp(names + sh[i].sh_name, ".gnu_debuglink"))
			continue;
		char buf[DEBUGLINK_MAX];
		if (sh[i].sh_size < 8 || sh[i].sh_size > sizeof(buf) ||
		    !read_exact(fd, buf, sh[i].sh_size, sh[i].sh_offset))
			break;
		size_t len = strnlen(buf, sh[i].sh_size);
		size_t crc_at = (len + 1 + 3) & ~(size_t)3;
		if (len == 0 || len >= sizeof(o->debug_link) || crc_at + 4 > sh[i].sh_size)
			break;
		memcpy(o->debug_link, buf, len + 1);
		memcpy(&o->crc, buf + crc_at, 4);
		o->has_debug_link = true;
		break;
	}
out:
	free(names);
	free(sh);
	close(fd);
}

int rt_loaded_objects(struct rt_loaded_list *l, uintptr_t only)
{
	memset(l, 0, sizeof(*l));
	l->only = only;
	dl_iterate_phdr(collect, l);
	for (size_t i = 0; i < l->nr; i++)
		read_debug_link(&l->v[i]);
	return l->nr || only ? 0 : -ENOMEM;
}
