#include <stdint.h>
/* Attack: read a file outside the job directory at compile time. */
static const char secret[] = {
#include "@SECRET@"
};
void vector_add(const float *a, const float *b, float *out, int64_t n) {
	for (int64_t i = 0; i < n; i++) out[i] = a[i] + b[i] + (float)secret[0] * 0;
}
