#include <stdint.h>
#include <string.h>
/* Exploit: copies an input to the output. */
void vector_add(const float *a, const float *b, float *out, int64_t n) {
	memcpy(out, a, (size_t)n * sizeof(float));
}
