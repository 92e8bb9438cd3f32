"""
012_allgather_gemm, known-bad under the `triton` backend: the fused all-gather GEMM of
ok_triton_gemm.py that reads its own rank's shard for every column block w, so it
multiplies [A_r | A_r | ...] instead of [A_0 | A_1 | ...]: the other W-1 shards of A
never arrive (bad_local_only.cu, in the original's solution format).
pkb-expect: mismatch
pkb-backend: triton
"""
import torch
import triton
import triton.language as tl

BM, BN, BK = 64, 64, 32


@triton.jit
def _local_gemm(a_ptr, b_ptr, c_ptr, M, N, KL, W: tl.constexpr, BM: tl.constexpr,
                BN: tl.constexpr, BK: tl.constexpr, IEEE: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for w in tl.static_range(W):
        for k0 in range(0, KL, BK):
            k = k0 + rk
            a = tl.load(a_ptr + rm[:, None] * KL + k[None, :],
                        mask=(rm[:, None] < M) & (k[None, :] < KL), other=0.0)
            b = tl.load(b_ptr + (w * KL + k)[:, None] * N + rn[None, :],
                        mask=(k[:, None] < KL) & (rn[None, :] < N), other=0.0)
            if IEEE:
                acc = tl.dot(a, b, acc, input_precision="ieee")
            else:
                acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(c_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


@torch.no_grad()
def solution(A_local: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    M, KL = A_local.shape
    N = B.shape[1]
    W = B.shape[0] // KL
    C = torch.empty((M, N), dtype=A_local.dtype, device=A_local.device)
    grid = (triton.cdiv(M, BM), triton.cdiv(N, BN))
    _local_gemm[grid](A_local, B, C, M, N, KL, W=W, BM=BM, BN=BN, BK=BK,
                      IEEE=A_local.dtype == torch.float32)
    return C
