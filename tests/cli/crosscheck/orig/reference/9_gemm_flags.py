import torch


def solution(tensor):
    # what a bf16 GEMM here would be allowed: 1.0 where torch's default is
    # still on, in either half (partial sums in bf16, or split-K at all:
    # cuBLASLt's split-K epilogue adds a bias to the rounded product, which
    # moved 049's and 050's routing weights), 0.0 where crosscheck turned
    # both off
    m = torch.backends.cuda.matmul
    flag = lambda n: getattr(m, n) or m.splitk_of(n)
    return torch.tensor([1.0 if flag("allow_bf16_reduced_precision_reduction") else 0.0,
                         1.0 if flag("allow_fp16_reduced_precision_reduction") else 0.0], torch.bfloat16)
