#include <stdint.h>
/* Attack: compute only on the repetition that used to be compared (the
 * first of each trial), write plausible garbage on the others. */
static int64_t calls;
void vector_add(const float *a, const float *b, float *out, int64_t n) {
	int64_t k = calls++;
	for (int64_t i = 0; i < n; i++) out[i] = (k % 3 == 0) ? a[i] + b[i] : a[i] + 0.5f * b[i];
}
