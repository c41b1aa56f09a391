#define _GNU_SOURCE
#include <elf.h>
#include <link.h>
#include <stdint.h>
#include <string.h>
/* Attack: find the reference's vector_add among the loaded objects (it
 * used to share the process) and call it. */
typedef void (*fn_t)(const float *, const float *, float *, int64_t);
static fn_t found;
static int visit(struct dl_phdr_info *info, size_t size, void *self) {
	(void)size;
	if (!strstr(info->dlpi_name, "ref")) return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		if (info->dlpi_phdr[i].p_type != PT_DYNAMIC) continue;
		ElfW(Dyn) *d = (ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
		ElfW(Sym) *sym = 0;
		const char *str = 0;
		for (; d->d_tag != DT_NULL; d++) {
			if (d->d_tag == DT_SYMTAB) sym = (ElfW(Sym) *)d->d_un.d_ptr;
			if (d->d_tag == DT_STRTAB) str = (const char *)d->d_un.d_ptr;
		}
		for (ElfW(Sym) *s = sym; s && (const char *)s < str; s++)
			if (s->st_value && !strcmp(str + s->st_name, "vector_add") && (void *)(info->dlpi_addr + s->st_value) != self)
				found = (fn_t)(info->dlpi_addr + s->st_value);
	}
	return 0;
}
void vector_add(const float *a, const float *b, float *out, int64_t n) {
	if (!found) dl_iterate_phdr(visit, (void *)vector_add);
	if (found) { found(a, b, out, n); return; }
	for (int64_t i = 0; i < n; i++) out[i] = 0; /* no reference here: give up */
}
