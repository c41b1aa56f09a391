#include <stdint.h>
/* Correct: unrolled by four. */
void vector_add(const float *a, const float *b, float *out, int64_t n) {
	int64_t i = 0;
	for (; i + 4 <= n; i += 4) {
		out[i] = a[i] + b[i];
		out[i + 1] = a[i + 1] + b[i + 1];
		out[i + 2] = a[i + 2] + b[i + 2];
		out[i + 3] = a[i + 3] + b[i + 3];
	}
	for (; i < n; i++) out[i] = a[i] + b[i];
}
