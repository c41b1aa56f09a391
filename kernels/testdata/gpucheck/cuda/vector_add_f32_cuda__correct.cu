// Correct: float4 loads, grid-stride loop over a persistent grid.
// crucible:launch grid=(1056,1,1) block=(256,1,1)
extern "C" __global__ void vector_add(const float *a, const float *b, float *out, long long n) {
	long long n4 = n / 4;
	const float4 *a4 = reinterpret_cast<const float4 *>(a);
	const float4 *b4 = reinterpret_cast<const float4 *>(b);
	float4 *o4 = reinterpret_cast<float4 *>(out);
	for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += (long long)gridDim.x * blockDim.x) {
		float4 x = a4[i], y = b4[i];
		o4[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
	}
	for (long long i = n4 * 4 + blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
		out[i] = a[i] + b[i];
}
