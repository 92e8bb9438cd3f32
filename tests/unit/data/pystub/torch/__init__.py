"""A stand-in for torch in pkb's host tests (tests/unit/test_pybridge.c): tensors over host
memory at raw addresses, as the CUDA array interface gives them, with the few operations
python/pkb_triton.py and the test candidates use. Not torch: no GPU, fp32/int32/uint8 only."""
import ctypes, math
from . import cuda, distributed  # noqa: F401

__version__ = "0+stub"


class dtype:
    def __init__(self, name, ctype, size):
        self.name, self.ctype, self.size = name, ctype, size

    def __repr__(self):
        return "torch." + self.name


float32 = dtype("float32", ctypes.c_float, 4)
int32 = dtype("int32", ctypes.c_int32, 4)
uint8 = dtype("uint8", ctypes.c_uint8, 1)
uint32 = dtype("uint32", ctypes.c_uint32, 4)
bfloat16 = dtype("bfloat16", ctypes.c_uint16, 2)
int16 = dtype("int16", ctypes.c_int16, 2)
_BY_TYPESTR = {"<f4": float32, "<i4": int32, "|u1": uint8, "<i2": int16}


def get_default_dtype():
    return float32


class device:
    def __init__(self, kind, index=0):
        self.type, self.index = kind, index


class Tensor:
    def __init__(self, ptr, shape, dt, keep=None):
        self.ptr, self.shape, self.dtype, self._keep = ptr, tuple(shape), dt, keep

    def numel(self):
        return math.prod(self.shape)

    def _arr(self):
        return (self.dtype.ctype * self.numel()).from_address(self.ptr)

    def data_ptr(self):
        return self.ptr

    def element_size(self):
        return self.dtype.size

    def view(self, dt):
        assert dt.size == self.dtype.size
        return Tensor(self.ptr, self.shape, dt, self)

    def tolist(self):
        return list(self._arr())

    def zero_(self):
        ctypes.memset(self.ptr, 0, self.numel() * self.dtype.size)
        return self

    def copy_(self, other):
        assert other.shape == self.shape and other.dtype is self.dtype
        ctypes.memmove(self.ptr, other.ptr, self.numel() * self.dtype.size)
        return self

    def _new(self, values):
        buf = (self.dtype.ctype * len(values))(*values)
        return Tensor(ctypes.addressof(buf), self.shape, self.dtype, buf)

    def __mul__(self, k):
        return self._new([v * k for v in self._arr()])

    def __add__(self, o):
        return self._new([a + b for a, b in zip(self._arr(), o._arr())])

    @property
    def device(self):
        return device("cuda", 0)


def as_tensor(obj, device=None):
    cai = obj.__cuda_array_interface__
    assert cai["version"] == 3 and cai["strides"] is None
    return Tensor(cai["data"][0], cai["shape"], _BY_TYPESTR[cai["typestr"]])


def empty(shape, dtype=float32):
    return Tensor(0, shape, dtype)
