#include <stdint.h>

void matmul(const float *a, const float *b, float *c, int64_t n) {
	for (int64_t i = 0; i < n; i++)
		for (int64_t j = 0; j < n; j++) {
			double acc = 0;
			for (int64_t k = 0; k < n; k++) acc += (double)a[i * n + k] * b[k * n + j];
			c[i * n + j] = (float)acc;
		}
}
