#include <stdint.h>
/* Control: the int64 task done in integers. */
void shift_add(const int64_t *a, const int64_t *b, int64_t *out, int64_t n) {
	for (int64_t i = 0; i < n; i++) out[i] = a[i] * 1125899906842624LL + b[i];
}
