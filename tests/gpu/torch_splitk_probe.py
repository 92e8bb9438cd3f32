"""Does torch's F.linear round once, T(xW + b), under each setting of
torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction? The
evidence behind tools/crosscheck.py:full_precision_gemms (049's README):
on 4x H200 with torch 2.11, 049's and 050's skinny routers came out as
T(T(xW) + b), a split-K bias epilogue. Inputs are multiples of 1/16 in
[-4, 4], so the exact sum s is known in double; each line counts the
outputs that differ from one rounding, T(s + b), and from two, T(T(s) + b).
  /opt/torch/.venv/bin/python3 tests/gpu/torch_splitk_probe.py
(not a test: run on a lent GPU; crosscheck's setting must give 0 in the
first count)"""
import torch

torch.manual_seed(0)


def q(*shape):
    return (torch.randn(*shape) * 16).round().clamp(-63, 63).div(16).bfloat16().cuda()


m = torch.backends.cuda.matmul
print("torch", torch.__version__, torch.cuda.get_device_name())
for cols in (2, 4, 8):
    x, w, b = q(1024, 1024), q(cols, 1024), q(cols)
    s = x.double() @ w.double().T
    one = (s + b.double()).bfloat16()
    two = (s.bfloat16().double() + b.double()).bfloat16()
    for v in (True, False, (False, False)):
        try:
            m.allow_bf16_reduced_precision_reduction = v
        except (TypeError, ValueError, RuntimeError) as e:
            print(f"cols {cols} setting {v}: refused ({e})")
            continue
        y = torch.nn.functional.linear(x, w, b)
        print(f"cols {cols} setting {v}: differ from one rounding {(y != one).sum().item()}, "
              f"from two {(y != two).sum().item()} of {y.numel()}")
m.allow_bf16_reduced_precision_reduction = True
