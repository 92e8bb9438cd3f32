"""
012_allgather_gemm, known-good under the `triton` backend, in the original's solution
format: the all-gather fused into a Triton GEMM over symmetric memory.

The first call allocates a staging buffer of A_local's shape (symm_mem.empty,
rendezvous); each call copies A_local into it and meets every rank (hdl.barrier). The
GEMM kernel then reads A's column block w straight from rank w's buffer
(hdl.buffer_ptrs_dev), so A_full = [A_0 | A_1 | ... | A_{W-1}] is never materialised:
C[i, j] = sum over w, k of A_w[i, k] * B[w*K/W + k, j], accumulated in fp32 by tl.dot
(input_precision "ieee" for fp32: the tolerance forbids TF32). A second barrier keeps
the next call from overwriting a buffer a peer still reads.

Traffic: each A tile crosses NVLink once per output column block (N / BN times): more
than the (W-1) * M*K/W*e of a gather, for a kernel that needs no gathered copy. Not tuned.
pkb-backend: triton
"""
import torch
import torch.distributed as dist
import torch.distributed._symmetric_memory as symm_mem
import triton
import triton.language as tl

BM, BN, BK = 64, 64, 32
_state = {}


@triton.jit
def _ag_gemm(table, b_ptr, c_ptr, M, N, KL, W: tl.constexpr, BM: tl.constexpr,
             BN: tl.constexpr, BK: tl.constexpr, IEEE: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    ptrs = table.to(tl.pointer_type(tl.uint64))
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for w in tl.static_range(W):
        a_base = tl.load(ptrs + w).to(tl.pointer_type(c_ptr.dtype.element_ty))
        for k0 in range(0, KL, BK):
            k = k0 + rk
            a = tl.load(a_base + rm[:, None] * KL + k[None, :],
                        mask=(rm[:, None] < M) & (k[None, :] < KL), other=0.0)
            b = tl.load(b_ptr + (w * KL + k)[:, None] * N + rn[None, :],
                        mask=(k[:, None] < KL) & (rn[None, :] < N), other=0.0)
            if IEEE:
                acc = tl.dot(a, b, acc, input_precision="ieee")
            else:
                acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(c_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


def _staging(a):
    key = (tuple(a.shape), a.dtype)
    if key not in _state:
        buf = symm_mem.empty(tuple(a.shape), dtype=a.dtype, device=a.device)
        _state[key] = (buf, symm_mem.rendezvous(buf, dist.group.WORLD))
    return _state[key]


@torch.no_grad()
def solution(A_local: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    buf, hdl = _staging(A_local)
    M, KL = A_local.shape
    N = B.shape[1]
    buf.copy_(A_local)
    hdl.barrier(channel=0)
    C = torch.empty((M, N), dtype=A_local.dtype, device=A_local.device)
    grid = (triton.cdiv(M, BM), triton.cdiv(N, BN))
    _ag_gemm[grid](hdl.buffer_ptrs_dev, B, C, M, N, KL, W=hdl.world_size, BM=BM, BN=BN, BK=BK,
                   IEEE=A_local.dtype == torch.float32)
    hdl.barrier(channel=0)
    return C
