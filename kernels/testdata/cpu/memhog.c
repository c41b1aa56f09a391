#include <stdint.h>
#include <stdlib.h>
#include <string.h>
/* Memory-hungry: asks for 16 GiB of scratch and uses it unchecked. */
void vector_add(const float *a, const float *b, float *out, int64_t n) {
	float *tmp = malloc((size_t)16 << 30);
	memset(tmp, 0, (size_t)16 << 30);
	for (int64_t i = 0; i < n; i++) out[i] = a[i] + b[i] + tmp[i];
	free(tmp);
}
