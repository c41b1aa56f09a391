#include <stdint.h>
/* Returns without touching the output: no evidence the work ran. */
void vector_add(const float *a, const float *b, float *out, int64_t n) {
	(void)a; (void)b; (void)out; (void)n;
}
