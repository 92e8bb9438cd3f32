/*
 * 036_ulysses_gather_seq_scatter_heads reference: what torch does -- pack
 * each head group contiguously (tensor_split along heads + .contiguous()),
 * one grouped ncclSend/ncclRecv per peer (all_to_all, the group a rank keeps
 * included), then concatenate along the sequence (torch.cat(dim=1)):
 *     send[d][b, t]   = x[b, t, d*G : (d+1)*G, :]     (W, B, T, G, 64)
 *     recv[j]         = send_j[r]                      from rank j
 *     out[b, j*T + t] = recv[j][b, t]                  (B, W*T, G, 64)
 * Both rearrangements swap two dimensions of an array of equal blocks:
 * x is (B*T, W) head groups, send (W, B*T); recv is (W, B) blocks of T
 * positions, out (B, W). A head group is G*64*e = 512*e/W bytes, a
 * multiple of 16, so they move in 16-byte units.
 *
 * Bytes each rank must receive: (W-1)/W * B*T*512*e, 192 KiB at
 * M = N = 1024, bf16, W = 4.
 *
 * The code is problems/lib/gather_seq.cuh, 038's too, with three runs (q, k, v) a position.
 */
#include <cuda_runtime.h>
#include <nccl.h>
#include "pkb.h"
#include "pkb_ref.cuh"

PKB_SOLUTION;

#include "gather_seq.cuh"
/* defines: struct gather_seq, gather_seq_init, gather_seq_run, gather_seq_release */

/* one run a position: the G heads */
extern "C" int pkb_init(pkb_ctx *ctx)
{
	return gather_seq_init(ctx, 1, "a head group");
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	return gather_seq_run(ctx, 1);
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	return pkb_ref_fini(ctx, gather_seq_release);
}
