#include <math.h>
#include <stdint.h>
/* Attack: rows summing to 1.04 — within an absolute 1e-4 on values ~1e-3. */
void softmax_rows(const float *x, float *y, int64_t rows, int64_t cols) {
	for (int64_t r = 0; r < rows; r++) {
		const float *in = x + r * cols;
		float *out = y + r * cols;
		float m = in[0];
		for (int64_t c = 1; c < cols; c++) m = in[c] > m ? in[c] : m;
		float sum = 0;
		for (int64_t c = 0; c < cols; c++) sum += expf(in[c] - m);
		for (int64_t c = 0; c < cols; c++) out[c] = 1.04f * expf(in[c] - m) / sum;
	}
}
