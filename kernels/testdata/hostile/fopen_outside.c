#include <stdint.h>
#include <stdio.h>
/* Attack: write a file outside the job directory, read one, at run time. */
void vector_add(const float *a, const float *b, float *out, int64_t n) {
	FILE *f = fopen("@MARKER@", "w");
	if (f) { fputs("escaped", f); fclose(f); }
	char buf[16] = {0};
	f = fopen("@SECRET@", "r");
	if (f) { fread(buf, 1, 15, f); fclose(f); }
	for (int64_t i = 0; i < n; i++) out[i] = a[i] + b[i] + (float)buf[0] * 0;
}
