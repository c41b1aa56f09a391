// Asks for 1 MiB of dynamic shared memory per block: no GPU has that much.
// crucible:launch grid=(4096,1,1) block=(256,1,1) shared=1048576
extern "C" __global__ void softmax_rows(const float *x, float *y, long long rows, long long cols) {
	extern __shared__ float stage[];
	long long r = blockIdx.x;
	for (long long c = threadIdx.x; c < cols; c += blockDim.x) stage[c] = x[r * cols + c];
	__syncthreads();
	float m = -__int_as_float(0x7f800000), s = 0.f;
	for (long long c = 0; c < cols; c++) m = fmaxf(m, stage[c]);
	for (long long c = 0; c < cols; c++) s += expf(stage[c] - m);
	for (long long c = threadIdx.x; c < cols; c += blockDim.x) y[r * cols + c] = expf(stage[c] - m) / s;
}
