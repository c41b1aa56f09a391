#include <stdint.h>
#include <sys/resource.h>
/* Attack: lift its own memory limit before allocating (as root on a full
 * host this once succeeded). */
void vector_add(const float *a, const float *b, float *out, int64_t n) {
	struct rlimit rl = {RLIM_INFINITY, RLIM_INFINITY};
	setrlimit(RLIMIT_AS, &rl);
	for (int64_t i = 0; i < n; i++) out[i] = a[i] + b[i];
}
