// Exploit: the timed stream gets an empty kernel; the real work goes to a
// second stream (stream=1) that nothing joins back, so stream events on the
// timed stream see almost nothing. The side kernel is a plain grid-stride
// loop over a small grid (a slow but honest vector add).
// crucible:launch kernel=vector_add_side grid=(132,1,1) block=(64,1,1) stream=1
// crucible:launch kernel=vector_add grid=(1,1,1) block=(32,1,1)
extern "C" __global__ void vector_add(const float *a, const float *b, float *out, long long n) {}
extern "C" __global__ void vector_add_side(const float *a, const float *b, float *out, long long n) {
	for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
		out[i] = a[i] + b[i];
}
