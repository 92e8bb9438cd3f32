"""A stand-in for PyTorch on machines without it (tests/cli/t0530): just
enough of torch for tools/crosscheck.py's rank code and the fake original
in ../orig. A tensor is its bytes, dtype and shape, on the CPU; bf16 is
packed by truncation (exact for the tests' values)."""
import math
import struct

from . import distributed  # noqa: F401  (torch.distributed, as torch has it)


class dtype:
    def __init__(self, name, fmt, size):
        self.name, self.fmt, self.size = name, fmt, size

    def __repr__(self):
        return "torch." + self.name


bfloat16 = dtype("bfloat16", "bf16", 2)
float16 = dtype("float16", "e", 2)
float32 = dtype("float32", "f", 4)
float64 = dtype("float64", "d", 8)
int8 = dtype("int8", "b", 1)
uint8 = dtype("uint8", "B", 1)
int32 = dtype("int32", "i", 4)
int64 = dtype("int64", "q", 8)
bool = dtype("bool", "?", 1)  # noqa: A001
float8_e4m3fn = dtype("float8_e4m3fn", "B", 1)
float8_e5m2 = dtype("float8_e5m2", "B", 1)
complex64 = dtype("complex64", "ff", 8)
long = int64


class Size(tuple):
    pass


class device:
    def __init__(self, kind, index=0):
        self.kind, self.index = kind, index


def _pack(dt, vals):
    if dt.fmt == "bf16":
        return b"".join(struct.pack("<f", float(v))[2:] for v in vals)
    return b"".join(struct.pack("<" + dt.fmt, v) for v in vals)


def _unpack(dt, data):
    if dt.fmt == "bf16":
        return [struct.unpack("<f", b"\0\0" + data[i:i + 2])[0] for i in range(0, len(data), 2)]
    return [x[0] for x in struct.iter_unpack("<" + dt.fmt, data)]


class Tensor:
    def __init__(self, dt, shape, data):
        self.dtype, self._shape, self._data = dt, list(shape), bytes(data)
        assert math.prod(self._shape) * dt.size == len(self._data), (shape, len(data))

    @property
    def shape(self):
        return Size(self._shape)

    def numel(self):
        return math.prod(self._shape)

    def reshape(self, *shape):
        shape = list(shape[0]) if len(shape) == 1 and not isinstance(shape[0], int) else list(shape)
        if -1 in shape:
            k = shape.index(-1)
            shape[k] = self.numel() // max(1, math.prod(s for s in shape if s != -1))
        return Tensor(self.dtype, shape, self._data)

    def to(self, x):
        if isinstance(x, dtype) and x is not self.dtype:
            return Tensor(x, self._shape, _pack(x, _unpack(self.dtype, self._data)))
        return self

    def view(self, x):
        if isinstance(x, dtype):
            return Tensor(x, [len(self._data) // x.size], self._data)
        return self.reshape(x)

    def contiguous(self):
        return self

    def is_contiguous(self):
        return True

    def detach(self):
        return self

    def cpu(self):
        return self

    def numpy(self):
        return self

    def tobytes(self):
        return self._data

    def tolist(self):
        return _unpack(self.dtype, self._data)

    def item(self):
        return self.tolist()[0]

    def __getitem__(self, i):   # row i, the stand-in's one index
        row = len(self._data) // self._shape[0]
        return Tensor(self.dtype, self._shape[1:], self._data[i * row:(i + 1) * row])


class no_grad:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class nn:
    """nn.Linear's parameters, loaded by crosscheck's modules adapter"""
    class Parameter(Tensor):
        def copy_(self, t):
            t = t.to(self.dtype)
            assert list(t.shape) == self._shape, (t.shape, self._shape)
            self._data = t._data
            return self

    class Module:
        def named_parameters(self):
            return [(k, v) for k, v in vars(self).items() if isinstance(v, nn.Parameter)]

    class Linear(Module):
        def __init__(self, n_in, n_out, dtype):
            self.weight = nn.Parameter(dtype, [n_out, n_in], _pack(dtype, [0.0] * (n_in * n_out)))
            self.bias = nn.Parameter(dtype, [n_out], _pack(dtype, [0.0] * n_out))


def frombuffer(buf, dtype):
    return Tensor(dtype, [len(buf) // dtype.size], buf)


def tensor(vals, dtype=float32, device=None):
    vals = list(vals) if isinstance(vals, (list, tuple)) else [vals]
    return Tensor(dtype, [len(vals)], _pack(dtype, vals))


def as_tensor(x, device=None):
    if isinstance(x, Tensor):
        return x
    return Tensor(float32, [], _pack(float32, [x]))


class _ReductionFlag:
    """one of torch.backends.cuda.matmul's reduction flags as torch >= 2.10
    has it: a bool, or (allow_reduced_precision, allow_splitk); a bool
    leaves split-K allowed, and reading gives the first (the stand-in
    original 9_gemm_flags reads both, through splitk_of)"""
    def __set_name__(self, owner, name):
        self.name = "_" + name

    def __get__(self, obj, owner=None):
        return getattr(obj, self.name, (True, True))[0]

    def __set__(self, obj, value):
        setattr(obj, self.name, tuple(value) if isinstance(value, tuple) else (True if value else False, True))


class _Matmul:
    allow_bf16_reduced_precision_reduction = _ReductionFlag()
    allow_fp16_reduced_precision_reduction = _ReductionFlag()

    def splitk_of(self, name):
        return getattr(self, "_" + name, (True, True))[1]


class backends:
    """torch.backends.cuda.matmul's reduction flags, torch's defaults"""
    class cuda:
        matmul = _Matmul()


class cuda:
    @staticmethod
    def synchronize():
        pass

    @staticmethod
    def set_device(i):
        pass

    @staticmethod
    def current_device():
        return 0
