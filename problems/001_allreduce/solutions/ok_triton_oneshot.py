"""
001_allreduce, known-good under the `triton` backend, in the original's solution
format (a Python file whose solution() every rank calls): a one-shot all-reduce in
Triton over symmetric memory.

The first call allocates a staging buffer with symm_mem.empty and rendezvous()es it
(every rank the same, in the same order); later calls reuse it. Each call copies the
input into this rank's buffer, meets every rank (hdl.barrier: a device-side barrier on
the current stream), then one Triton kernel reads the element range of each program
from all W ranks' buffers (hdl.buffer_ptrs_dev, a device table of their addresses),
sums in fp32 in rank order and writes the output; a second barrier keeps the next call
from overwriting a buffer a peer still reads.

Traffic: every rank reads (W-1) * M*N*e bytes from peers, in one hop. Not tuned.
pkb-backend: triton
"""
import torch
import torch.distributed as dist
import torch.distributed._symmetric_memory as symm_mem
import triton
import triton.language as tl

BLOCK = 2048
_state = {}


@triton.jit
def _sum_ranks(table, out_ptr, n, W: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    ptrs = table.to(tl.pointer_type(tl.uint64))
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for r in tl.static_range(W):
        peer = tl.load(ptrs + r).to(tl.pointer_type(out_ptr.dtype.element_ty))
        acc += tl.load(peer + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + offs, acc.to(out_ptr.dtype.element_ty), mask=mask)


def _staging(tensor):
    key = (tensor.numel(), tensor.dtype)
    if key not in _state:
        buf = symm_mem.empty(tensor.numel(), dtype=tensor.dtype, device=tensor.device)
        _state[key] = (buf, symm_mem.rendezvous(buf, dist.group.WORLD))
    return _state[key]


@torch.no_grad()
def solution(tensor: torch.Tensor) -> torch.Tensor:
    buf, hdl = _staging(tensor)
    n = tensor.numel()
    buf.copy_(tensor.reshape(-1))
    hdl.barrier(channel=0)
    out = torch.empty_like(tensor)
    _sum_ranks[(triton.cdiv(n, BLOCK),)](hdl.buffer_ptrs_dev, out, n,
                                         W=hdl.world_size, BLOCK=BLOCK)
    hdl.barrier(channel=0)
    return out
