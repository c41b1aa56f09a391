__global__ void saxpy(int n, float a, const float* __restrict__ x, float* __restrict__ y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
// launch: saxpy<<<(N + 255) / 256, 256>>>(N, 2.0f, d_x, d_y);
cudaError_t err = cudaGetLastError(); if (err != cudaSuccess) { fprintf(stderr, "%s\n", cudaGetErrorString(err)); }
__shared__ float tile[32][33]; __syncthreads(); atomicAdd(&out[0], 1.0e-3f);
