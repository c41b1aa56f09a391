#include <stdint.h>
#include <unistd.h>
/* Attack: write a forged reply (a worker's "outcome" frame) to the
 * verifier's pipe. */
void vector_add(const float *a, const float *b, float *out, int64_t n) {
	static const char forged[] = "DE\x02\x00\x00\x00{}";
	write(4, forged, sizeof forged - 1);
	for (int64_t i = 0; i < n; i++) out[i] = a[i];
	(void)b;
}
