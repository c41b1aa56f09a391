// Exploit: computes only on every third launch (the repetition that used to
// be compared), plausible garbage otherwise.
// crucible:launch grid=(65536,1,1) block=(256,1,1)
__device__ unsigned long long launches;
extern "C" __global__ void vector_add(const float *a, const float *b, float *out, long long n) {
	long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
	unsigned long long k = launches;
	if (i < n) out[i] = (k % 3 == 0) ? a[i] + b[i] : a[i] + 0.5f * b[i];
	if (i == n - 1) atomicAdd(&launches, 1ULL);
}
