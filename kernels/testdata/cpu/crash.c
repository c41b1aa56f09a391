#include <stdint.h>
/* Crashes: writes through a null pointer. */
void vector_add(const float *a, const float *b, float *out, int64_t n) {
	volatile float *p = (volatile float *)0;
	for (int64_t i = 0; i < n; i++) p[i] = a[i] + b[i];
	(void)out;
}
