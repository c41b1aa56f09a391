// One block per row; a shared-memory tree reduction for the max and the sum.
// crucible:launch grid=(4096,1,1) block=(256,1,1) shared=1024
extern "C" __global__ void softmax_rows(const float *x, float *y, long long rows, long long cols) {
	extern __shared__ float red[];
	long long r = blockIdx.x;
	if (r >= rows) return;
	const float *in = x + r * cols;
	float *out = y + r * cols;
	float m = -__int_as_float(0x7f800000);
	for (long long c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, in[c]);
	red[threadIdx.x] = m;
	__syncthreads();
	for (int s = blockDim.x / 2; s > 0; s >>= 1) {
		if (threadIdx.x < s) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + s]);
		__syncthreads();
	}
	m = red[0];
	__syncthreads();
	float sum = 0.f;
	for (long long c = threadIdx.x; c < cols; c += blockDim.x) sum += expf(in[c] - m);
	red[threadIdx.x] = sum;
	__syncthreads();
	for (int s = blockDim.x / 2; s > 0; s >>= 1) {
		if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
		__syncthreads();
	}
	sum = red[0];
	for (long long c = threadIdx.x; c < cols; c += blockDim.x) out[c] = expf(in[c] - m) / sum;
}
