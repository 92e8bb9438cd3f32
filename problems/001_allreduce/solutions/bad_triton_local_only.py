"""
001_allreduce, known-bad under the `triton` backend: skips communication and returns
the local input scaled by W, in a Triton kernel -- the "right" answer if every rank held
the same data (bad_local_only.cu, in the original's solution format).
pkb-expect: mismatch
pkb-backend: triton
"""
import torch
import torch.distributed as dist
import triton
import triton.language as tl

BLOCK = 2048


@triton.jit
def _scale(x_ptr, out_ptr, n, w, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + offs, (x * w).to(out_ptr.dtype.element_ty), mask=mask)


@torch.no_grad()
def solution(tensor: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(tensor)
    n = tensor.numel()
    _scale[(triton.cdiv(n, BLOCK),)](tensor, out, n, float(dist.get_world_size()), BLOCK=BLOCK)
    return out
