// Does not compile: undeclared identifier.
// crucible:launch grid=(65536,1,1) block=(256,1,1)
extern "C" __global__ void vector_add(const float *a, const float *b, float *out, long long n) {
	long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) out[i] = a[i] + bb[i];
}
