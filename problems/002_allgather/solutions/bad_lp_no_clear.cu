/*
 * 002_allgather, known-bad: ok_lamport_push.cu with a receiver that never
 * empties a unit after reading it, the slip of an "empty value" protocol
 * whose buffers are not reset. From the third call on, the half of the call
 * before last still holds that call's data, which has no "empty" element:
 * a rank takes the peers' inputs of two calls ago wherever the new ones
 * have not landed yet. Stale data, caught because every call has fresh
 * inputs.
 * pkb-expect: mismatch
 * pkb-mutant-of: ok_lamport_push.cu
 */

/* pkb-replace */
		if (!pkb_lp_take_all<T, N>(comm, pkb_lp_unit(lp, me, half, 0, j), units,
					   pkb_lp_peers(comm), v))
			return;
/* pkb-with */
		uint32_t wait = pkb_lp_peers(comm);   /* bounded, never emptied */
		for (uint32_t spins = 0; wait && spins < (1u << 24); spins++)
#pragma unroll
			for (int r = 0; r < N; r++)
				if (wait >> r & 1) {
					v[r] = pkb_lp_peek(pkb_lp_unit(lp, me, half, r * units, j));
					if (pkb_lp_landed<T>(v[r]))
						wait &= ~(1u << r);
				}
/* pkb-end */
