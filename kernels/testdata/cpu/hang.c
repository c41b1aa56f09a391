#include <stdint.h>
/* Hangs: spins forever. */
void vector_add(const float *a, const float *b, float *out, int64_t n) {
	volatile int64_t x = 0;
	for (;;) x++;
}
