/*
 * im2col.cuh -- the im2col of 076's convolution, shared by the candidates
 * that run it as a GEMM (ok_im2col_nccl.cu, ok_gemm_pull.cu and the bad_
 * ones built on them). Include it after defining THREADS (the kernel's block
 * size).
 */
#ifndef PKB_076_IM2COL_CUH
#define PKB_076_IM2COL_CUH

template <typename T> struct __align__(16) vec16 { T v[16 / sizeof(T)]; };

struct geom {
	int cin, tin, hin, win, ho, wo;
};

/*
 * col[ci*27 + kl][rr*wo + w] = x[ci][t+kt][h+kh][w+kw], kl = kt*9 + kh*3 + kw,
 * for the chunk's output rows th = r0 + rr = (t, h). One unit of work is
 * (ci, rr): the 9 input rows it needs are staged in shared memory (coalesced
 * reads, mostly from L2: x is 21 MB at W = 4), then written out as 27 rows
 * of wo positions in 16-byte vectors (wo is a multiple of the vector).
 */
template <typename T>
__global__ void __launch_bounds__(THREADS)
im2col(const T *x, T *col, struct geom g, int r0, int nrows, int np)
{
	extern __shared__ __align__(16) unsigned char smem_raw[];
	T *rows = (T *)smem_raw;   /* [kt*3 + kh][win] */
	const int V = 16 / sizeof(T);
	int nq = g.wo / V;
	int units = g.cin * nrows;
	for (int u = blockIdx.x; u < units; u += gridDim.x) {
		int ci = u / nrows, rr = u - ci * nrows;
		int th = r0 + rr, t = th / g.ho, h = th - t * g.ho;
		__syncthreads();   /* the previous unit's readers are done */
		for (int i = threadIdx.x; i < 9 * g.win; i += blockDim.x) {
			int j = i / g.win, w = i - j * g.win;
			rows[i] = x[(((int64_t)ci * g.tin + t + j / 3) * g.hin + h + j % 3) * g.win + w];
		}
		__syncthreads();
		for (int i = threadIdx.x; i < 27 * nq; i += blockDim.x) {
			int kl = i / nq, q = i - kl * nq;
			const T *src = rows + (kl / 3) * g.win + q * V + kl % 3;
			vec16<T> o;
#pragma unroll
			for (int e = 0; e < V; e++)
				o.v[e] = src[e];
			*(vec16<T> *)(col + (int64_t)(ci * 27 + kl) * np + rr * g.wo + q * V) = o;
		}
	}
}

#endif /* PKB_076_IM2COL_CUH */
