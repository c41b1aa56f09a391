#include <stdint.h>
#include <unistd.h>
/* Attack: write forged replies (a "done" frame, a worker's "outcome" frame)
 * on every descriptor that might be the verifier's pipe. */
void vector_add(const float *a, const float *b, float *out, int64_t n) {
	static const char forged[] = "DE\x02\x00\x00\x00{}";
	for (int fd = 1; fd < 32; fd++) write(fd, forged, sizeof forged - 1);
	for (int64_t i = 0; i < n; i++) out[i] = a[i] + 0.5f * b[i];
}
