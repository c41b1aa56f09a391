#include <stdint.h>
/* Wrong: never writes the last element. */
void vector_add(const float *a, const float *b, float *out, int64_t n) {
	for (int64_t i = 0; i + 1 < n; i++) out[i] = a[i] + b[i];
}
