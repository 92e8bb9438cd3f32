/*
 * 038_ulysses_gather_seq_scatter_heads_qkv reference: what torch does -- pack
 * each rank's C = 512/W columns of q, k and v contiguously (the (B, T, 3,
 * 512) view, tensor_split along its last dim + .contiguous()), one grouped
 * ncclSend/ncclRecv per peer (all_to_all, the chunk a rank keeps included),
 * then concatenate along the sequence (torch.cat(dim=1)) and view back:
 *     send[d][b, t, i]   = qkv[b, t, i*512 + d*C : i*512 + (d+1)*C]
 *     recv[j]            = send_j[r]                  from rank j
 *     out[b, j*T + t, :] = recv[j][b, t, :, :]        (B, W*T, 3C)
 * Both rearrangements swap two dimensions of an array of equal blocks:
 * qkv is (B*T*3, W) runs of C, send (W, B*T*3); recv is (W, B) blocks of
 * 3T runs, out (B, W). A run is C*e = 512*e/W bytes, a multiple of 16, so
 * they move in 16-byte units.
 *
 * Bytes each rank must receive: (W-1)/W * B*T*1536*e, 576 KiB at
 * M = N = 1024, bf16, W = 4.
 *
 * The code is problems/lib/gather_seq.cuh, 036's too, with one run (the heads) a position.
 */
#include <cuda_runtime.h>
#include <nccl.h>
#include "pkb.h"
#include "pkb_ref.cuh"

PKB_SOLUTION;

#include "gather_seq.cuh"
/* defines: struct gather_seq, gather_seq_init, gather_seq_run, gather_seq_release */

/* three runs a position: q, k, v */
extern "C" int pkb_init(pkb_ctx *ctx)
{
	return gather_seq_init(ctx, 3, "a run of 512/W values");
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	return gather_seq_run(ctx, 3);
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	return pkb_ref_fini(ctx, gather_seq_release);
}
