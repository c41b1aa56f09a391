#include <stdint.h>
/* Control: a correct blocked matmul (another summation order). */
void matmul(const float *a, const float *b, float *c, int64_t n) {
	for (int64_t i = 0; i < n * n; i++) c[i] = 0;
	for (int64_t kk = 0; kk < n; kk += 16)
		for (int64_t i = 0; i < n; i++)
			for (int64_t k = kk; k < kk + 16 && k < n; k++) {
				float aik = a[i * n + k];
				for (int64_t j = 0; j < n; j++) c[i * n + j] += aik * b[k * n + j];
			}
}
