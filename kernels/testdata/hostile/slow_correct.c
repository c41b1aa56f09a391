#include <stdint.h>
/* Control: correct but slow — every element recomputed in double several times. */
void vector_add(const float *a, const float *b, float *out, int64_t n) {
	for (int64_t i = 0; i < n; i++) {
		double s = 0;
		for (int k = 0; k < 8; k++) s = (double)a[i] + (double)b[i];
		out[i] = (float)s;
	}
}
