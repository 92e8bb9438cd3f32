/*
 * 086_tp_muon_orthogonalization, known-bad: ok_symm_allreduce with both
 * all-reduces replaced by the local term -- every rank normalizes and
 * orthogonalizes its own column shard as if it were the whole matrix. The
 * barriers stay (harmless); the data from peers is never used.
 * pkb-expect: mismatch
 * pkb-mutant-of: ok_symm_allreduce.cu
 */

/* pkb-replace */
		for (int j = 0; j < comm.world; j++)
			s += nsym[j][0];
/* pkb-with */
		s = nsym[comm.rank][0];   /* the shortcut: our own norm only */
/* pkb-end */

/* pkb-replace */
		float4 s = ((const float4 *)gram[0])[v];
		for (int j = 1; j < comm.world; j++) {
			float4 g = ((const float4 *)gram[j])[v];
			s.x += g.x;
			s.y += g.y;
			s.z += g.z;
			s.w += g.w;
		}
		((float4 *)A)[v] = s;
/* pkb-with */
		/* the shortcut: our own Gram partial only */
		((float4 *)A)[v] = ((const float4 *)gram[comm.rank])[v];
/* pkb-end */
