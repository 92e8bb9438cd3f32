// Does cublasGemmEx with a bf16 C, beta = 1 (040's reference: bias rows as
// C) round once, T(AB + C), or round the product first, T(T(AB) + C)?
// nvcc -O2 -arch=sm_90a tests/gpu/cublas_bias_probe.cu -lcublas -o probe && ./probe
// (not a test: the evidence behind problems/lib/linear.cuh, run on a lent GPU)
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cublas_v2.h>
static float bf(float x) { return __bfloat162float(__float2bfloat16(x)); }
static double nrand() { double u = (rand() + 1.0) / (RAND_MAX + 2.0), v = rand() / (RAND_MAX + 1.0);
	return sqrt(-2 * log(u)) * cos(6.283185307179586 * v); }
int main()
{
	const int ks[] = { 256 }, ms[] = { 512, 256, 64, 32 }, n = 512;   // (m, n, k) = (chunk, hidden, d_in)
	cublasHandle_t h; cublasCreate(&h);
	cublasSetMathMode(h, (cublasMath_t)(CUBLAS_DEFAULT_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION));
	void *ws; cudaMalloc(&ws, 32u << 20); cublasSetWorkspace(h, ws, 32u << 20);
	for (int m : ms) for (int k : ks) {
		std::vector<__nv_bfloat16> x(m * k), w(n * k), c(m * n), b(n);
		for (auto &v : x) v = __float2bfloat16((float)nrand());
		for (auto &v : w) v = __float2bfloat16((float)nrand());
		for (auto &v : b) v = __float2bfloat16((float)nrand());
		for (int i = 0; i < m * n; i++) c[i] = b[i % n];
		__nv_bfloat16 *dx, *dw, *dc; float *df;
		cudaMalloc(&dx, m * k * 2); cudaMalloc(&dw, n * k * 2); cudaMalloc(&dc, m * n * 2); cudaMalloc(&df, m * n * 4);
		cudaMemcpy(dx, x.data(), m * k * 2, cudaMemcpyHostToDevice);
		cudaMemcpy(dw, w.data(), n * k * 2, cudaMemcpyHostToDevice);
		cudaMemcpy(dc, c.data(), m * n * 2, cudaMemcpyHostToDevice);
		float one = 1, zero = 0;
		// row-major C (m, n) = X (m, k) W^T: column-major C^T = W X^T (as pkb_ref_gemm_rm)
		cublasStatus_t s1 = cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, &one, dw, CUDA_R_16BF, k, dx, CUDA_R_16BF, k,
			     &one, dc, CUDA_R_16BF, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
		cublasStatus_t s2 = cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, &one, dw, CUDA_R_16BF, k, dx, CUDA_R_16BF, k,
			     &zero, df, CUDA_R_32F, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
		std::vector<__nv_bfloat16> got(m * n); std::vector<float> acc(m * n);
		cudaMemcpy(got.data(), dc, m * n * 2, cudaMemcpyDeviceToHost);
		cudaMemcpy(acc.data(), df, m * n * 4, cudaMemcpyDeviceToHost);
		long once = 0, twice = 0, both = 0, neither = 0, zeros_twice = 0;
		for (int i = 0; i < m * n; i++) {
			float g = __bfloat162float(got[i]), bb = __bfloat162float(b[i % n]);
			float o = bf(acc[i] + bb), t = bf(bf(acc[i]) + bb);
			int a1 = g == o, a2 = g == t;
			both += a1 && a2; once += a1 && !a2; twice += a2 && !a1; neither += !a1 && !a2;
			zeros_twice += g == 0.0f && o != 0.0f;
		}
		printf("m=%d n=%d k=%d (status %d %d): matches one rounding only %ld, two roundings only %ld, both %ld, "
		       "neither %ld; zero where one rounding is not: %ld\n", m, n, k, s1, s2, once, twice, both, neither, zeros_twice);
	}
	return 0;
}
