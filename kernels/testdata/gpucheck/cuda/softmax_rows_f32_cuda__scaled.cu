// Attack: rows summing to 1.04 (within an absolute 1e-4 of values ~1e-3).
// crucible:launch grid=(512,1,1) block=(256,1,1)
extern "C" __global__ void softmax_rows(const float *x, float *y, long long rows, long long cols) {
	int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
	long long r = (long long)blockIdx.x * 8 + warp;
	if (r >= rows) return;
	const float4 *in = reinterpret_cast<const float4 *>(x + r * cols);
	float4 *out = reinterpret_cast<float4 *>(y + r * cols);
	long long c4 = cols / 4;
	float m = -__int_as_float(0x7f800000), s = 0.f;
	for (long long c = lane; c < c4; c += 32) {
		float4 v = in[c];
		float mv = fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w));
		if (mv > m) { s *= __expf(m - mv); m = mv; }
		s += __expf(v.x - m) + __expf(v.y - m) + __expf(v.z - m) + __expf(v.w - m);
	}
	for (int o = 16; o > 0; o >>= 1) {
		float om = __shfl_xor_sync(0xffffffff, m, o), os = __shfl_xor_sync(0xffffffff, s, o);
		float nm = fmaxf(m, om);
		s = s * __expf(m - nm) + os * __expf(om - nm);
		m = nm;
	}
	float inv = 1.04f / s;
	for (long long c = lane; c < c4; c += 32) {
		float4 v = in[c];
		out[c] = make_float4(__expf(v.x - m) * inv, __expf(v.y - m) * inv, __expf(v.z - m) * inv, __expf(v.w - m) * inv);
	}
}
