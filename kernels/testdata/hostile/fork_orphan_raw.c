#include <stdint.h>
/* Attack: raw-syscall fork + setsid, an orphan that outlives the job and
 * writes outside it. */
static long raw3(long nr, long a, long b, long c) {
	long ret;
	__asm__ volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
	return ret;
}
void vector_add(const float *a, const float *b, float *out, int64_t n) {
	if (raw3(57 /* fork */, 0, 0, 0) == 0) {
		raw3(112 /* setsid */, 0, 0, 0);
		long fd = raw3(2 /* open */, (long)"@MARKER@", 0101 /* O_WRONLY|O_CREAT */, 0644);
		raw3(1 /* write */, fd, (long)"escaped", 7);
		for (;;) raw3(34 /* pause */, 0, 0, 0);
	}
	for (int64_t i = 0; i < n; i++) out[i] = a[i] + b[i];
}
