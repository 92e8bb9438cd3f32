import torch


def solution(tensor):
    # what a bf16 GEMM here would be allowed: 1.0 where torch's default
    # (split-K partial sums in bf16) is still on, 0.0 where crosscheck
    # turned it off
    m = torch.backends.cuda.matmul
    return torch.tensor([1.0 if m.allow_bf16_reduced_precision_reduction else 0.0,
                         1.0 if m.allow_fp16_reduced_precision_reduction else 0.0], torch.bfloat16)
