/*
 * mlp_kernels.cuh -- the MLP's element-wise kernels, which 040, 041 and 042
 * run alike: rounding to T, addmm's bias fill, relu and its backward,
 * mse_loss's backward and the bias gradient's column sums. Included by the
 * three reference.cu files after pkb_device.cuh and pkb_ref.cuh; the
 * grid-stride loops take the block size from blockDim.x (the references
 * launch THREADS = 256).
 */
#ifndef PKB_MLP_KERNELS_CUH
#define PKB_MLP_KERNELS_CUH

template <typename T> __device__ __forceinline__ float rt(float x)
{
	return pkb_to_float(pkb_from_float<T>(x));
}

/* every row of a (rows, cols) matrix := b, the C of addmm's beta = 1 */
template <typename T>
__global__ void fill_rows(T *c, const T *b, int64_t rows, int64_t cols)
{
	for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < rows * cols;
	     i += (int64_t)gridDim.x * blockDim.x)
		c[i] = b[i % cols];
}

template <typename T>
__global__ void relu(T *x, int64_t n)
{
	for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
	     i += (int64_t)gridDim.x * blockDim.x)
		if (!(pkb_to_float(x[i]) > 0.0f))
			x[i] = pkb_from_float<T>(0.0f);
}

/* mse_loss_backward with grad_output = 1: alpha * (out - y), each op in T */
template <typename T>
__global__ void mse_grad(T *o, const T *y, float alpha, int64_t n)
{
	float a = rt<T>(alpha);
	for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
	     i += (int64_t)gridDim.x * blockDim.x)
		o[i] = pkb_from_float<T>(a * rt<T>(pkb_to_float(o[i]) - pkb_to_float(y[i])));
}

/* relu's backward: the gradient where the activation is > 0, else 0 */
template <typename T>
__global__ void relu_mask(T *dh, const T *h, int64_t n)
{
	for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
	     i += (int64_t)gridDim.x * blockDim.x)
		if (!(pkb_to_float(h[i]) > 0.0f))
			dh[i] = pkb_from_float<T>(0.0f);
}

/* column sums of (rows, cols) in fp32, one rounding: a bias gradient */
template <typename T>
__global__ void colsum(const T *x, T *out, int64_t rows, int64_t cols)
{
	int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
	if (c >= cols)
		return;
	float acc = 0.0f;
	for (int64_t r = 0; r < rows; r++)
		acc += pkb_to_float(x[r * cols + c]);
	out[c] = pkb_from_float<T>(acc);
}

#endif
