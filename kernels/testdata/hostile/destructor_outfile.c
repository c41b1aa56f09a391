#include <stdint.h>
#include <stdio.h>
/* Attack: compute nothing useful; after the harness returns, rewrite the
 * results file it used to leave in the working directory. */
__attribute__((destructor)) static void rewrite(void) {
	FILE *f = fopen("out.bin", "wb");
	if (f) { fputs("forged", f); fclose(f); }
	f = fopen("@MARKER@", "w");
	if (f) { fputs("escaped", f); fclose(f); }
}
void vector_add(const float *a, const float *b, float *out, int64_t n) {
	for (int64_t i = 0; i < n; i++) out[i] = a[i];
	(void)b;
}
