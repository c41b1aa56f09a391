// Crashes: writes far outside the output buffer (illegal address). The
// context is reset afterwards; later candidates must still run.
// crucible:launch grid=(65536,1,1) block=(256,1,1)
extern "C" __global__ void vector_add(const float *a, const float *b, float *out, long long n) {
	long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) out[i + (1LL << 40)] = a[i] + b[i];
}
