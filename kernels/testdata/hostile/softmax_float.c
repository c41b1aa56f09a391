#include <math.h>
#include <stdint.h>
/* Control: a correct softmax computed in float (not double) with expf. */
void softmax_rows(const float *x, float *y, int64_t rows, int64_t cols) {
	for (int64_t r = 0; r < rows; r++) {
		const float *in = x + r * cols;
		float *out = y + r * cols;
		float m = in[0];
		for (int64_t c = 1; c < cols; c++) m = in[c] > m ? in[c] : m;
		float sum = 0;
		for (int64_t c = 0; c < cols; c++) { out[c] = expf(in[c] - m); sum += out[c]; }
		float inv = 1.0f / sum;
		for (int64_t c = 0; c < cols; c++) out[c] *= inv;
	}
}
