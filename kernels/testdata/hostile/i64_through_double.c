#include <stdint.h>
/* Attack: int64 arithmetic done in float64: off by the rounding, equal
 * once both sides are converted to float64. */
void shift_add(const int64_t *a, const int64_t *b, int64_t *out, int64_t n) {
	for (int64_t i = 0; i < n; i++) out[i] = (int64_t)((double)a[i] * 1125899906842624.0 + (double)b[i]);
}
