/*
 * 075_fla_gated_deltanet_cp, known-bad: history truncated to one chunk.
 * To take the rank-to-rank chain off the critical path, every rank runs
 * its 64 tokens once from a zero state and pushes that final state to
 * rank+1 before it waits for its own inbox; it then runs its chunk again
 * from what rank-1 pushed, for its outputs. Rank r thus starts from the
 * state of rank r-1's tokens alone: everything before them is dropped.
 * With the original's decay (~exp(-0.8) a token) this is bit-equal to the
 * full recurrence; with this port's dt_bias in [-8, -6) the state keeps
 * the whole sequence, and the simulation (numpy, the last rank's outputs)
 * fails by 105-131 / 800-1020 / 3.6e4-5.5e4 element bounds in bf16 / fp16
 * / fp32 at W = 3 .. 8, L2 49-68 / 390-534 / 3e5-4e5 limits.
 * At W = 2 it is RIGHT: rank 0's chunk is the whole history, and rank 1
 * gets exactly the state it needs (simulated 0.25-0.41 bounds, a passing
 * order of the same sums). So it runs at W >= 3 only (pkb-worlds).
 * pkb-mutant-of: ok_symm_state_pass.cu
 * pkb-expect: mismatch
 * pkb-worlds: 3 4 5 6 7 8
 */

/* pkb-replace */
	size_t at_state = ((size_t)(h * DV + j) * DK + 8 * lane) / 4;   /* float4 units */
	if (from_prev) {
/* pkb-with */
	size_t at_state = ((size_t)(h * DV + j) * DK + 8 * lane) / 4;   /* float4 units */
	if (to_next) {
		/* our chunk from zero, pushed before we wait: one chunk of history */
		float z[8] = { 0, 0, 0, 0, 0, 0, 0, 0 };
		for (int64_t t = 0; t < sn; t++) {
			const float4 *kp = (const float4 *)(kn + (h * sn + t) * DK) + 2 * lane;
			float4 k0 = kp[0], k1 = kp[1];
			float kk[8] = { k0.x, k0.y, k0.z, k0.w, k1.x, k1.y, k1.z, k1.w };
			float gt = g[h * sn + t], p = 0;
#pragma unroll
			for (int i = 0; i < 8; i++) {
				z[i] *= gt;
				p = fmaf(kk[i], z[i], p);
			}
			for (int off = 16; off > 0; off /= 2)
				p += __shfl_xor_sync(0xffffffffu, p, off);
			float u = (pkb_to_float(v[(t * h_n + h) * DV + j]) - p) * b[h * sn + t];
#pragma unroll
			for (int i = 0; i < 8; i++)
				z[i] = fmaf(kk[i], u, z[i]);
		}
		float4 *nx = (float4 *)box[comm.rank + 1] + at_state;
		nx[0] = make_float4(z[0], z[1], z[2], z[3]);
		nx[1] = make_float4(z[4], z[5], z[6], z[7]);
		__syncthreads();
		if (threadIdx.x == 0) {
			__threadfence_system();
			pkb_st_release_sys((uint32_t *)(box[comm.rank + 1] + flags_off) + blk, epoch);
		}
	}
	if (from_prev) {
/* pkb-end */

/* pkb-replace */
	if (!to_next)
		return;
	float4 *nx = (float4 *)box[comm.rank + 1] + at_state;
	nx[0] = make_float4(st[0], st[1], st[2], st[3]);
	nx[1] = make_float4(st[4], st[5], st[6], st[7]);
	__syncthreads();
	if (threadIdx.x == 0) {
		__threadfence_system();
		pkb_st_release_sys((uint32_t *)(box[comm.rank + 1] + flags_off) + blk, epoch);
	}
}
/* pkb-with */
}
/* pkb-end */
