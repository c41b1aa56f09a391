#include <math.h>
#include <stdint.h>

void softmax_rows(const float *x, float *y, int64_t rows, int64_t cols) {
	for (int64_t r = 0; r < rows; r++) {
		const float *in = x + r * cols;
		float *out = y + r * cols;
		float m = in[0];
		for (int64_t c = 1; c < cols; c++) m = in[c] > m ? in[c] : m;
		double sum = 0;
		for (int64_t c = 0; c < cols; c++) sum += exp((double)in[c] - m);
		for (int64_t c = 0; c < cols; c++) out[c] = (float)(exp((double)in[c] - m) / sum);
	}
}
