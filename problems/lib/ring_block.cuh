/*
 * ring_block.cuh -- 054's attention kernel, which 055 and 056 run in their
 * rings too: one block of keys against this rank's queries, in fp32 on the
 * CUDA cores, merged into a running (out, lse) pair. Included by the three
 * reference.cu files after pkb.h, pkb_device.cuh and pkb_ref.cuh.
 */
#ifndef PKB_RING_BLOCK_CUH
#define PKB_RING_BLOCK_CUH

#define HD 64        /* head_dim */
#define QT 32        /* query rows a thread block */
#define KT 32        /* keys a tile */
#define NT 128       /* threads: 4 a query row */

__device__ __forceinline__ float log_sigmoid(float x)
{
	return fminf(x, 0.0f) - log1pf(expf(-fabsf(x)));
}

/*
 * One block of keys against this rank's queries: q (B, S, H, 64), k and v
 * (B, S, H, 64) of the block held; causal masks key j > query i (the
 * diagonal block). first: the running pair is this block's; last: write
 * the merged result to out in T instead of the running pair.
 */
template <typename T>
__global__ void __launch_bounds__(NT)
block_attn(const T *q, const T *k, const T *v, int s_len, int heads, float scale, int causal,
	   int first, int last, float *acc_o, float *acc_lse, T *out)
{
	__shared__ float ks[KT][HD + 1], vs[KT][HD], ps[QT][KT + 1];
	int tid = threadIdx.x, row = tid >> 2, sub = tid & 3;
	int q0 = blockIdx.x * QT, h = blockIdx.y, b = blockIdx.z, qi = q0 + row;
	int64_t ts = (int64_t)heads * HD;          /* elements between tokens */
	int64_t base = (int64_t)b * s_len * ts + (int64_t)h * HD;
	float qr[HD], o[HD / 4], m = -INFINITY, l = 0;
#pragma unroll
	for (int d = 0; d < HD; d++)
		qr[d] = qi < s_len ? pkb_to_float(q[base + qi * ts + d]) : 0.0f;
#pragma unroll
	for (int i = 0; i < HD / 4; i++)
		o[i] = 0;
	/* the diagonal block: keys past the block's last query are all masked */
	int kend = causal ? min(s_len, q0 + QT) : s_len;
	for (int k0 = 0; k0 < kend; k0 += KT) {
		__syncthreads();   /* the last tile's readers are done */
		for (int i = tid; i < KT * HD; i += NT) {
			int r = i / HD, d = i % HD;
			bool in = k0 + r < s_len;
			int64_t at = base + (k0 + r) * ts + d;
			ks[r][d] = in ? pkb_to_float(k[at]) : 0.0f;
			vs[r][d] = in ? pkb_to_float(v[at]) : 0.0f;
		}
		__syncthreads();
		/* scores of keys sub, sub+4, ...: the row's 4 threads split the tile */
		float sc[KT / 4], tmax = -INFINITY;
#pragma unroll
		for (int i = 0; i < KT / 4; i++) {
			int kj = k0 + sub + 4 * i;
			float dot = 0;
#pragma unroll
			for (int d = 0; d < HD; d++)
				dot = fmaf(qr[d], ks[sub + 4 * i][d], dot);
			bool ok = kj < s_len && (!causal || kj <= qi);
			sc[i] = ok ? dot * scale : -INFINITY;
			tmax = fmaxf(tmax, sc[i]);
		}
		tmax = fmaxf(tmax, __shfl_xor_sync(0xffffffffu, tmax, 1));
		tmax = fmaxf(tmax, __shfl_xor_sync(0xffffffffu, tmax, 2));
		float mnew = fmaxf(m, tmax);
		/* rescale what the earlier tiles summed to the new max */
		float alpha = mnew == -INFINITY ? 1.0f : expf(m - mnew), psum = 0;
#pragma unroll
		for (int i = 0; i < KT / 4; i++) {
			float p = sc[i] == -INFINITY ? 0.0f : expf(sc[i] - mnew);
			ps[row][sub + 4 * i] = p;
			psum += p;
		}
		psum += __shfl_xor_sync(0xffffffffu, psum, 1);
		psum += __shfl_xor_sync(0xffffffffu, psum, 2);
		l = l * alpha + psum;
		m = mnew;
		__syncwarp();      /* a row's 4 threads share a warp */
#pragma unroll
		for (int i = 0; i < HD / 4; i++)
			o[i] *= alpha;
		for (int j = 0; j < KT; j++) {
			float p = ps[row][j];
#pragma unroll
			for (int i = 0; i < HD / 4; i++)
				o[i] = fmaf(p, vs[j][sub + 4 * i], o[i]);
		}
	}
	if (qi >= s_len)
		return;
	/* the block's (out, lse), merged as the original merges them */
	float lse_b = m + logf(l), inv = 1.0f / l;
	int64_t at = base + qi * ts, li = ((int64_t)b * heads + h) * s_len + qi;
	float lse = first ? lse_b : acc_lse[li];
	float w = 1.0f / (1.0f + expf(lse - lse_b));      /* sigmoid(lse_b - lse) */
#pragma unroll
	for (int i = 0; i < HD / 4; i++) {
		int d = sub + 4 * i;
		float ob = o[i] * inv, r = ob;
		if (!first) {
			float cur = acc_o[at + d];
			r = cur - w * (cur - ob);
		}
		if (last)
			out[at + d] = pkb_from_float<T>(r);
		else
			acc_o[at + d] = r;
	}
	if (sub == 0 && !last)
		acc_lse[li] = first ? lse_b : lse - log_sigmoid(lse - lse_b);
}

#endif
