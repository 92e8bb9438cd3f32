"""pkb_triton -- pkb's host for a `triton` candidate (docs/BACKENDS.md).

pkb's own code, never model-written: the solution process (`pkb __sol`,
src/solhost.c) embeds Python (src/pybridge.c) and calls this module's
functions, each with one JSON string, each returning "" or an error message.

  setup(json)  before the sandbox: imports torch and Triton on this rank's
               GPU, points Triton's cache at the process's scratch folder,
               installs what the original's solutions call of
               torch.distributed and its symmetric memory, served by pkb
               (below), and readies Triton so that no process starts after
               the sandbox, which traps every one (_triton_setup: its lookups
               answered now, the PTX to the driver's JIT instead of ptxas, a
               ctypes launcher instead of the C one gcc would build, a probe
               kernel run)
  load(json)   after the sandbox: imports the candidate file (its top level
               is the candidate's code) and finds its solution()
  init(json)   nothing yet (the candidate allocates on its first call)
  call(json)   wraps the judge's buffers as torch tensors (the inputs, in the
               problem's order, then its parameters), calls solution() on
               pkb's stream, and copies what it returns into the outputs
  fini(json)   drops the candidate's objects

The candidate sees torch.distributed as the original's worker sets it up,
without NCCL: get_rank, get_world_size, barrier (the judges' host barrier),
group.WORLD; every collective raises. torch.distributed._symmetric_memory's
empty() allocates pkb symmetric memory (the same on every rank, collective)
and rendezvous() returns a handle with the fields the original's solutions
use (buffer_ptrs, buffer_ptrs_dev, signal_pad_ptrs, signal_pad_ptrs_dev,
get_buffer, barrier, rank, world_size; multicast_ptr is 0: no multicast).

Nothing here trusts the candidate: the judge checks every output, input and
time itself (docs/ANTI_CHEAT.md). This module only makes the candidate's
Python reach the judge's buffers.
"""
import contextlib
import ctypes
import importlib
import importlib.util
import inspect
import json
import math
import operator
import os
import re
import struct
import sys
import tempfile
import types

_S = {}   # the process's one solution: its module, function, handles

# pkb's dtype names (src/dtype.c) -> (CUDA array interface typestr, bytes,
# the torch dtype to view the tensor as, by name; None: the typestr's own)
_DTYPES = {
    "bf16": ("<i2", 2, "bfloat16"), "fp16": ("<f2", 2, None), "fp32": ("<f4", 4, None),
    "fp64": ("<f8", 8, None), "int8": ("|i1", 1, None), "uint8": ("|u1", 1, None),
    "int32": ("<i4", 4, None), "int64": ("<i8", 8, None), "bool": ("|b1", 1, None),
    "fp8_e4m3": ("|u1", 1, "float8_e4m3fn"), "fp8_e5m2": ("|u1", 1, "float8_e5m2"),
    "complex64": ("<c8", 8, None),
}
_COLLECTIVES = (
    "all_reduce", "all_gather", "all_gather_into_tensor", "all_gather_object", "reduce",
    "reduce_scatter", "reduce_scatter_tensor", "broadcast", "broadcast_object_list",
    "all_to_all", "all_to_all_single", "gather", "scatter", "send", "recv", "isend", "irecv",
    "batch_isend_irecv", "new_group", "init_process_group", "monitored_barrier",
)


class _CAI:
    """A device buffer as the CUDA array interface gives it to torch.as_tensor."""

    def __init__(self, ptr, shape, typestr):
        self.__cuda_array_interface__ = {
            "shape": tuple(int(s) for s in shape), "typestr": typestr,
            "data": (int(ptr), False), "version": 3, "strides": None, "stream": None,
        }


def _torch_dtype_name(dt):
    return str(dt).replace("torch.", "")


def _pkb_dtype(dt):
    """pkb's name of a torch dtype."""
    name = _torch_dtype_name(dt)
    for k, (ts, size, view) in _DTYPES.items():
        if view == name:
            return k
    table = {"float16": "fp16", "float32": "fp32", "float64": "fp64", "int8": "int8",
             "uint8": "uint8", "int32": "int32", "int64": "int64", "bool": "bool",
             "complex64": "complex64"}
    if name in table:
        return table[name]
    raise TypeError("pkb symmetric memory has no dtype %s" % name)


def tensor(ptr, shape, dtype):
    """The buffer at device address ptr as a torch tensor (no copy)."""
    torch = _S["torch"]
    typestr, _, view = _DTYPES[dtype]
    t = torch.as_tensor(_CAI(ptr, shape, typestr), device=_S["device"])
    return t.view(getattr(torch, view)) if view else t


# ---- services pkb gives (C callbacks, src/solhost.c) ------------------------

def _callbacks(cb):
    u64p = ctypes.POINTER(ctypes.c_uint64)
    alloc = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_uint64, u64p, u64p, u64p)(cb["symm_alloc"])
    hbar = ctypes.CFUNCTYPE(ctypes.c_int)(cb["host_barrier"])
    dbar = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_uint64)(cb["dev_barrier"])
    return alloc, hbar, dbar


def _symm_alloc(nbytes):
    """pkb symmetric memory of nbytes on every rank (collective): (local,
    [peer addresses], address of the device table of them)."""
    world = _S["world"]
    local, dev = ctypes.c_uint64(0), ctypes.c_uint64(0)
    peers = (ctypes.c_uint64 * world)()
    if _S["cb"][0](max(int(nbytes), 1), ctypes.byref(local), peers, ctypes.byref(dev)) != 0:
        raise RuntimeError("pkb: symmetric memory of %d bytes could not be allocated here "
                           "(allocate on the first call, not while timed; the log says why)"
                           % nbytes)
    return local.value, [int(p) for p in peers], dev.value


def _host_barrier():
    if _S["cb"][1]() != 0:
        raise RuntimeError("pkb: the host barrier failed")


def _dev_barrier(stream):
    if _S["cb"][2](int(stream)) != 0:
        raise RuntimeError("pkb: the device barrier could not be enqueued")


# ---- torch.distributed as the original's solutions see it -----------------

SIGNAL_PAD_BYTES = 64 << 10   # per rank and buffer: 16K uint32 flags, zeroed


class SymmHandle:
    """What torch's symm_mem.rendezvous returns, over pkb's symmetric memory."""

    def __init__(self, buf, local, peers, peers_dev, nbytes):
        self.rank, self.world_size = _S["rank"], _S["world"]
        self.buffer_ptrs, self.buffer_ptrs_dev = peers, peers_dev
        self.buffer_size = nbytes
        self.multicast_ptr = 0
        self.signal_pad_size = SIGNAL_PAD_BYTES
        pad, pads, pads_dev = _symm_alloc(SIGNAL_PAD_BYTES)
        tensor(pad, (SIGNAL_PAD_BYTES,), "uint8").zero_()
        _host_barrier()   # every rank's pad is zero before any is used
        self.signal_pad_ptrs, self.signal_pad_ptrs_dev = pads, pads_dev
        self._buf = buf

    def get_buffer(self, rank, sizes, dtype, storage_offset=0):
        pd = _pkb_dtype(dtype)
        off = int(storage_offset) * _DTYPES[pd][1]
        return tensor(self.buffer_ptrs[rank] + off, tuple(sizes), pd)

    def get_signal_pad(self, rank, sizes=None, dtype=None, storage_offset=0):
        torch = _S["torch"]
        dtype = dtype or torch.uint32
        if sizes is None:
            sizes = (SIGNAL_PAD_BYTES // torch.empty((), dtype=dtype).element_size(),)
        size = torch.empty((), dtype=dtype).element_size()
        return tensor(self.signal_pad_ptrs[rank] + int(storage_offset) * size, tuple(sizes),
                      {1: "uint8", 4: "int32", 8: "int64"}[size])

    def barrier(self, channel=0, timeout_ms=0):
        _dev_barrier(_S["torch"].cuda.current_stream().cuda_stream)


def _symm_empty(*size, dtype=None, device=None):
    torch = _S["torch"]
    shape = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else size
    dtype = dtype or torch.get_default_dtype()
    pd = _pkb_dtype(dtype)
    nbytes = math.prod(int(s) for s in shape) * _DTYPES[pd][1]
    local, peers, peers_dev = _symm_alloc(nbytes)
    t = tensor(local, shape, pd)
    _S["symm"][local] = (t, local, peers, peers_dev, nbytes)
    return t


def _symm_rendezvous(t, group=None):
    key = t.data_ptr()
    if key not in _S["symm"]:
        raise ValueError("symm_mem.rendezvous: not a tensor of symm_mem.empty")
    if key not in _S["handles"]:
        _S["handles"][key] = SymmHandle(*_S["symm"][key])
    return _S["handles"][key]


def _refuse(name):
    def f(*a, **k):
        raise RuntimeError("torch.distributed.%s: the triton backend has no NCCL; move the "
                           "data through symmetric memory (docs/BACKENDS.md)" % name)
    return f


def _install_dist(dist, symm_mem):
    world = types.SimpleNamespace(name="pkb-world")
    dist.is_initialized = lambda: True
    dist.is_available = lambda: True
    dist.get_rank = lambda group=None: _S["rank"]
    dist.get_world_size = lambda group=None: _S["world"]
    dist.get_backend = lambda group=None: "pkb"
    dist.barrier = lambda group=None, async_op=False, device_ids=None: _host_barrier()
    dist.group = types.SimpleNamespace(WORLD=world)
    for name in _COLLECTIVES:
        setattr(dist, name, _refuse(name))
    symm_mem.empty = _symm_empty
    symm_mem.rendezvous = _symm_rendezvous
    symm_mem.enable_symm_mem_for_group = lambda group_name: None
    symm_mem.is_symm_mem_enabled_for_group = lambda group_name: True


# ---- Triton with no process inside the sandbox ------------------------------
#
# The sandbox traps every new process (sandbox.c: execve, fork, clone without
# CLONE_THREAD): the solution process is killed by SIGSYS. Triton 3.6 starts
# processes on a kernel's way to the GPU (read in triton==3.6.0's source):
#   backends/nvidia/compiler.py  CUDABackend.hash, in every compile's cache
#       key: get_ptxas_version -> `ptxas --version`; make_llir, make_ptx:
#       get_ptx_version_from_options -> get_ptxas(arch).version ->
#       knobs.NvidiaTool.from_path -> `ptxas --version`; make_cubin: `ptxas`
#   backends/nvidia/driver.py  CudaLauncher.__init__, once per signature: a
#       C launcher built by runtime/build.py compile_module_from_src ->
#       _build -> `gcc`; library_dirs -> libcuda_dirs -> `/sbin/ldconfig -p`
#   runtime/build.py  platform_key, compile_module_from_src's cache key:
#       platform.architecture() -> `file -b`
# _triton_setup answers each before the sandbox: Triton's driver module is
# built there (gcc, ldconfig and file run, their answers cached); ptxas is
# asked its version once and the answer pinned; make_cubin hands the PTX
# itself to the driver, whose JIT compiles it in cuModuleLoadData; and
# _Launcher, a ctypes copy of Triton 3.6's C launcher, replaces the one gcc
# would build. A C module still asked for raises (knobs.build.impl) rather
# than start gcc, and a probe kernel, compiled and launched with process
# starts refused (_no_process), proves the path before the sandbox. Another
# Triton is checked against what is copied here (_triton_layout) and refused
# in one line where it differs.

# cuda.h's values (Triton 3.6 ships cuda.h of CUDA 12.8)
CUDA_ERROR_INVALID_VALUE = 1
CU_POINTER_ATTRIBUTE_DEVICE_POINTER = 3
CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED = 14
CU_LAUNCH_ATTRIBUTE_COOPERATIVE = 2
CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = 4
CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE = 5
CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6
CU_CLUSTER_SCHEDULING_POLICY_SPREAD = 1


class CuLaunchAttrValue(ctypes.Union):   # CUlaunchAttributeValue: 64 bytes
    _fields_ = [("pad", ctypes.c_uint64 * 8), ("u32", ctypes.c_uint32 * 16)]


class CuLaunchAttr(ctypes.Structure):   # CUlaunchAttribute: 72 bytes
    _fields_ = [("id", ctypes.c_int), ("pad", ctypes.c_char * 4), ("value", CuLaunchAttrValue)]


class CuLaunchConfig(ctypes.Structure):   # CUlaunchConfig: 56 bytes
    _fields_ = [("gridDimX", ctypes.c_uint), ("gridDimY", ctypes.c_uint),
                ("gridDimZ", ctypes.c_uint), ("blockDimX", ctypes.c_uint),
                ("blockDimY", ctypes.c_uint), ("blockDimZ", ctypes.c_uint),
                ("sharedMemBytes", ctypes.c_uint), ("hStream", ctypes.c_void_p),
                ("attrs", ctypes.POINTER(CuLaunchAttr)), ("numAttrs", ctypes.c_uint)]


_vp, _int = ctypes.c_void_p, ctypes.c_int
CU_FUNCS = (   # the driver calls _Launcher and _triton_setup make: name, result, arguments
    ("cuLaunchKernelEx", _int, (ctypes.POINTER(CuLaunchConfig), _vp, ctypes.POINTER(_vp), _vp)),
    ("cuPointerGetAttribute", _int, (_vp, _int, ctypes.c_uint64)),
    ("cuCtxGetCurrent", _int, (ctypes.POINTER(_vp),)),
    ("cuDeviceGet", _int, (ctypes.POINTER(_int), _int)),
    ("cuDevicePrimaryCtxRetain", _int, (ctypes.POINTER(_vp), _int)),
    ("cuCtxSetCurrent", _int, (_vp,)),
    ("cuFuncSetAttribute", _int, (_vp, _int, _int)),
    ("cuGetErrorString", _int, (_int, ctypes.POINTER(ctypes.c_char_p))),
    ("cuDriverGetVersion", _int, (ctypes.POINTER(_int),)),
)


def cu_table(address):
    """CU_FUNCS as ctypes functions at address(name): libcuda's (_libcuda)
    or a test's stand-ins. CFUNCTYPE's calls release the GIL, as the C
    launcher's Py_BEGIN_ALLOW_THREADS does."""
    return types.SimpleNamespace(**{name: ctypes.CFUNCTYPE(res, *args)(address(name))
                                    for name, res, args in CU_FUNCS})


def _libcuda():
    lib = ctypes.CDLL("libcuda.so.1")   # Triton's driver module and torch have it loaded
    cu = cu_table(lambda name: ctypes.cast(getattr(lib, name), ctypes.c_void_p).value)
    cu.lib = lib
    return cu


def _cu_error(cu, code):
    s = ctypes.c_char_p()
    cu.cuGetErrorString(code, ctypes.byref(s))
    return RuntimeError("Triton Error [CUDA]: " + (s.value.decode(errors="replace") if s.value
                                                   else "error %d" % code))


# the launcher's scalar arguments: Triton 3.6's ty_to_cpp, the PyArg_ParseTuple
# format it parses each with (its range checked, or None: wrapped), and the
# float packing (FLOAT_STORAGE_TYPE, pack_fp16 ...)
_TY_CPP = {"i1": "int8_t", "i8": "int8_t", "i16": "int16_t", "i32": "int32_t", "i64": "int64_t",
           "u1": "uint8_t", "u8": "uint8_t", "u16": "uint16_t", "u32": "uint32_t",
           "u64": "uint64_t", "fp16": "double", "bf16": "double", "fp32": "double",
           "f32": "double", "fp64": "double", "nvTmaDesc": "CUtensorMap", "*fp32": "CUdeviceptr"}
_FLOAT_STORAGE = {"fp16": "uint16_t", "bf16": "uint16_t", "fp32": "uint32_t", "f32": "uint32_t",
                  "fp64": "uint64_t"}
_INTS = {   # C type, range of its format ("b" is unsigned in CPython, "B" ... "K" wrap)
    "int8_t": (ctypes.c_int8, 0, 255), "int16_t": (ctypes.c_int16, -(1 << 15), (1 << 15) - 1),
    "int32_t": (ctypes.c_int32, -(1 << 31), (1 << 31) - 1),
    "int64_t": (ctypes.c_int64, -(1 << 63), (1 << 63) - 1),
    "uint8_t": (ctypes.c_uint8, None, None), "uint16_t": (ctypes.c_uint16, None, None),
    "uint32_t": (ctypes.c_uint32, None, None), "uint64_t": (ctypes.c_uint64, None, None),
}


def _pack_fp16(x):   # PyFloat_Pack2: OverflowError past fp16's range
    return int.from_bytes(struct.pack("<e", x), "little")


def _pack_bf16(x):   # the top half of the fp32 bits: truncation, as Triton's pack_bf16
    return ctypes.c_uint32.from_buffer(ctypes.c_float(x)).value >> 16


_FLOATS = {   # the parameter's C type, and the Python value stored in it
    "fp16": (ctypes.c_uint16, _pack_fp16), "bf16": (ctypes.c_uint16, _pack_bf16),
    "fp32": (ctypes.c_float, float), "f32": (ctypes.c_float, float),
    "fp64": (ctypes.c_double, float),
}


def expand_signature(sig, tensordesc_meta):
    """make_launcher's _expand_signature (driver.py): a tensor descriptor is
    its TMA map, or its base pointer, shape, strides and padding flag, then
    its shape and strides again."""
    out, k = [], 0
    for s in sig:
        if isinstance(s, str) and s.startswith("tensordesc"):
            meta = tensordesc_meta[k] if tensordesc_meta else None
            k += 1
            m = re.match(r"tensordesc<([^[>]*)\[([^]]*)\]", s)
            ndim = m.group(2).count(",") + 1
            if meta is None:
                out += ["*" + m.group(1)] + ["i64"] * (2 * ndim) + ["i1"]
            else:
                out.append("nvTmaDesc")
            out += ["i32"] * ndim + ["i64"] * ndim
        else:
            out.append(s)
    assert not tensordesc_meta or k == len(tensordesc_meta)
    return out


def _flatten(sig, out):
    for s in sig:
        if isinstance(s, tuple):
            _flatten(s, out)
        else:
            out.append(s)
    return out


def _flatten_args(sig, args, out):
    """the arguments as PyArg_ParseTuple's "(...)" of a tuple type takes them"""
    for s, a in zip(sig, args):
        if isinstance(s, tuple):
            a = tuple(a)
            if len(a) != len(s):
                raise TypeError("must be sequence of length %d, not %d" % (len(s), len(a)))
            _flatten_args(s, a, out)
        else:
            out.append(a)
    return out


def _launch_attrs(pdl, cooperative, num_ctas):
    """the launch's CUlaunchAttribute array and its length, as _launch of
    make_launcher fills them (read-only: kept per launcher and options)"""
    attrs, n = (CuLaunchAttr * 4)(), 0
    if pdl:
        attrs[n].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
        attrs[n].value.u32[0], n = 1, n + 1
    if cooperative:
        attrs[n].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE
        attrs[n].value.u32[0], n = 1, n + 1
    if num_ctas != 1:
        attrs[n].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
        attrs[n].value.u32[0], attrs[n].value.u32[1], attrs[n].value.u32[2] = num_ctas, 1, 1
        attrs[n + 1].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE
        attrs[n + 1].value.u32[0] = CU_CLUSTER_SCHEDULING_POLICY_SPREAD
        n += 2
    return (attrs if n else None), n


class _Launcher:
    """Triton 3.6's CudaLauncher (backends/nvidia/driver.py) and the C
    launcher its make_launcher writes, in Python: the same arguments in the
    same order (constexprs dropped, tuples flattened, each scalar in its C
    type), the global and profile scratch pointers appended, the hooks, the
    context, the launch attributes, and cuLaunchKernelEx. A launch's values
    live in one ctypes structure of the signature's C types (Values), and
    the kernel's parameters are the addresses of its fields. _launcher_class
    binds the class to Triton's driver module and the driver calls."""

    drv = cu = None     # triton.backends.nvidia.driver, cu_table()
    tma_offset = None   # of the CUtensorMap in a PyCUtensorMap; None: unknown

    def __init__(self, src, metadata):
        signature = {idx: value for idx, value in src.signature.items()}
        tensordesc_meta = getattr(metadata, "tensordesc_meta", None)
        self.sig = expand_signature(signature.values(), tensordesc_meta)
        self.nested = any(isinstance(s, tuple) for s in self.sig)
        # flattened argument i -> a field of Values (or, a TMA map, the object's own memory)
        fields, self.ints, self.floats, self.ptrs, self.maps, order = [], [], [], [], [], []
        for i, ty in enumerate(_flatten(self.sig, [])):
            if ty == "constexpr":
                continue
            f = len(fields)
            if ty[0] == "*":
                fields.append(ctypes.c_uint64)
                self.ptrs.append((f, i))
            elif ty == "nvTmaDesc":
                if self.tma_offset is None:
                    raise RuntimeError("pkb: this Triton's PyCUtensorMap is not laid out as "
                                       "3.6's: pkb's launcher cannot pass a host tensor "
                                       "descriptor")
                self.maps.append((len(order), i))
                order.append(None)
                continue
            elif ty in _FLOATS:
                fields.append(_FLOATS[ty][0])
                self.floats.append((f, i, _FLOATS[ty][1]))
            else:
                ctype, lo, hi = _INTS[_TY_CPP[ty]]   # KeyError: a type Triton has none for
                fields.append(ctype)
                self.ints.append((f, i, lo, hi))
            order.append(f)
        fields += [ctypes.c_uint64, ctypes.c_uint64]   # &global_scratch, &profile_scratch
        order += [len(fields) - 2, len(fields) - 1]
        self.Values = type("Values", (ctypes.Structure,),
                           {"_fields_": [("a%d" % k, t) for k, t in enumerate(fields)]})
        self.nvalues = len(fields)
        self.offsets = [None if f is None else getattr(self.Values, "a%d" % f).offset
                        for f in order]
        self.Params = ctypes.c_void_p * len(order)
        self.num_ctas = getattr(metadata, "num_ctas", 1)
        self.attrs = {}   # (pdl, cooperative, num_ctas) -> _launch_attrs
        self.launch = self.drv.wrap_handle_tensordesc(self._launch, signature, tensordesc_meta)
        self.global_scratch_size = metadata.global_scratch_size
        self.global_scratch_align = metadata.global_scratch_align
        self.profile_scratch_size = metadata.profile_scratch_size
        self.profile_scratch_align = metadata.profile_scratch_align
        self.launch_cooperative_grid = metadata.launch_cooperative_grid
        self.launch_pdl = metadata.launch_pdl

    def __call__(self, gridX, gridY, gridZ, stream, function, *args):   # 3.6's, as written

        def allocate_scratch(size, align, allocator):
            if size > 0:
                grid_size = gridX * gridY * gridZ
                alloc_size = grid_size * self.num_ctas * size
                alloc_fn = allocator.get()
                return alloc_fn(alloc_size, align, stream)
            return None

        alloc = self.drv._allocation
        global_scratch = allocate_scratch(self.global_scratch_size, self.global_scratch_align,
                                          alloc._allocator)
        profile_scratch = allocate_scratch(self.profile_scratch_size, self.profile_scratch_align,
                                           alloc._profile_allocator)
        self.launch(gridX, gridY, gridZ, stream, function, self.launch_cooperative_grid,
                    self.launch_pdl, global_scratch, profile_scratch, *args)

    def _pointer(self, obj, idx):   # getPointer
        if isinstance(obj, int):
            if obj < 0 or obj >> 64:
                raise OverflowError("pointer argument %d out of range of uint64" % idx)
            return obj
        if obj is None:
            return 0
        try:
            ptr = obj.data_ptr()
        except Exception:
            raise TypeError("Pointer argument must be either uint64 or have data_ptr method")
        if not isinstance(ptr, int):
            raise TypeError("data_ptr method of Pointer object must return 64-bit int")
        if not ptr:
            return 0
        dev = ctypes.c_uint64(0)
        st = self.cu.cuPointerGetAttribute(ctypes.byref(dev), CU_POINTER_ATTRIBUTE_DEVICE_POINTER,
                                           ptr)
        if st == CUDA_ERROR_INVALID_VALUE:
            raise ValueError("Pointer argument (at %d) cannot be accessed from Triton (cpu tensor?)"
                             % idx)
        if st:
            raise _cu_error(self.cu, st)
        return dev.value

    def _tensor_map(self, obj):   # getTmaDesc: the map inside the object, not a copy
        if type(obj) is not self.drv.PyCUtensorMap:
            raise TypeError("object must be of type PyCUtensorMap, got %s" % type(obj).__name__)
        addr = id(obj) + self.tma_offset
        if addr % 128:
            raise ValueError("CUtensorMap must be aligned to 128B, but got (&map) mod 128 = %d"
                             % (addr % 128))
        return addr

    def _context(self):   # ensureCudaContext
        cu, ctx = self.cu, ctypes.c_void_p()
        st = cu.cuCtxGetCurrent(ctypes.byref(ctx))
        if st == 0 and not ctx.value:
            dev = ctypes.c_int(0)
            st = (cu.cuDeviceGet(ctypes.byref(dev), 0)
                  or cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev.value)
                  or cu.cuCtxSetCurrent(ctx))
        if st:
            raise _cu_error(cu, st)

    def _launch(self, gridX, gridY, gridZ, stream, function, launch_cooperative_grid, launch_pdl,
                global_scratch, profile_scratch, kernel_metadata, launch_metadata,
                launch_enter_hook, launch_exit_hook, *args):
        cu = self.cu
        self._context()
        if len(args) != len(self.sig):
            raise TypeError("the kernel takes %d arguments after the launch's, %d given"
                            % (len(self.sig), len(args)))
        flat = _flatten_args(self.sig, args, []) if self.nested else args
        try:
            num_warps, num_ctas, shared_memory = kernel_metadata
        except (TypeError, ValueError):
            raise TypeError("kernel_metadata must be a tuple")
        # the scalars as PyArg_ParseTuple reads them, before the hook
        vals = [0] * self.nvalues
        for f, i, lo, hi in self.ints:
            v = vals[f] = operator.index(flat[i])
            if lo is not None and not lo <= v <= hi:
                raise OverflowError("argument %d: %d is out of range of its C type" % (i, v))
        for f, i, pack in self.floats:
            vals[f] = pack(float(flat[i]))
        if launch_enter_hook is not None:
            launch_enter_hook(launch_metadata)
        vals[-2] = 0 if global_scratch is None else self._pointer(global_scratch, -1)
        vals[-1] = 0 if profile_scratch is None else self._pointer(profile_scratch, -1)
        for f, i in self.ptrs:
            vals[f] = self._pointer(flat[i], i)
        values = self.Values(*vals)
        base = ctypes.addressof(values)
        addrs = [base + o if o is not None else 0 for o in self.offsets]
        for k, i in self.maps:
            addrs[k] = self._tensor_map(flat[i])
        params = self.Params(*addrs)
        if gridX * gridY * gridZ > 0:
            key = (bool(launch_pdl), bool(launch_cooperative_grid), num_ctas)
            attrs, n = self.attrs.get(key) or self.attrs.setdefault(key, _launch_attrs(*key))
            config = CuLaunchConfig(gridX * num_ctas, gridY, gridZ, 32 * num_warps, 1, 1,
                                    shared_memory, stream, attrs, n)
            err = None
            if num_ctas == 16:   # non-portable; works on H100 and B200 (Triton's note)
                st = cu.cuFuncSetAttribute(function,
                                           CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1)
                err = _cu_error(cu, st) if st else None
            st = cu.cuLaunchKernelEx(ctypes.byref(config), function, params, None)
            if st or err:
                raise _cu_error(cu, st) if st else err
        if launch_exit_hook is not None:
            launch_exit_hook(launch_metadata)


def _launcher_class(drv, cu):
    """_Launcher bound to Triton's driver module and the driver calls"""
    off = -(-object.__basicsize__ // 128) * 128   # offsetof(PyCUtensorMapObject, tensorMap)
    pymap = getattr(drv, "PyCUtensorMap", None)
    ok = pymap is not None and pymap.__basicsize__ == off + 128   # 128: sizeof(CUtensorMap)
    return type("PkbCudaLauncher", (_Launcher,), {"drv": drv, "cu": cu,
                                                  "tma_offset": off if ok else None})


def _source(obj):
    return " ".join(inspect.getsource(obj).split())


def _triton_layout(triton):
    """Triton's modules, or the first way this Triton differs from the 3.6
    that _Launcher and _triton_setup copy (None where it does not)."""
    try:
        comp = importlib.import_module("triton.backends.nvidia.compiler")
        drv = importlib.import_module("triton.backends.nvidia.driver")
        build = importlib.import_module("triton.runtime.build")
        compiler = importlib.import_module("triton.compiler.compiler")
        knobs = triton.knobs
        need = {comp: ("CUDABackend", "get_ptxas", "get_ptxas_version", "ptx_get_version",
                       "get_ptx_version_from_options"),
                drv: ("CudaLauncher", "CudaDriver", "make_launcher", "wrap_handle_tensordesc",
                      "ty_to_cpp", "FLOAT_STORAGE_TYPE", "_BASE_ARGS_FORMAT", "_allocation",
                      "library_dirs"),
                build: ("compile_module_from_src", "platform_key"), knobs: ("build", "NvidiaTool")}
        for mod, names in need.items():
            for name in names:
                if not hasattr(mod, name):
                    return None, "%s has no %s" % (mod.__name__, name)
        if not hasattr(comp.CUDABackend, "make_cubin") or not hasattr(knobs.build, "impl"):
            return None, "no CUDABackend.make_cubin or knobs.build.impl"
        if drv._BASE_ARGS_FORMAT != "iiiKKppOOOOOO":
            return None, "the C launcher's arguments are %r" % drv._BASE_ARGS_FORMAT
        for ty, cpp in _TY_CPP.items():
            if drv.ty_to_cpp(ty) != cpp:
                return None, "ty_to_cpp(%r) is %r" % (ty, drv.ty_to_cpp(ty))
        if drv.FLOAT_STORAGE_TYPE != _FLOAT_STORAGE:
            return None, "FLOAT_STORAGE_TYPE is %r" % drv.FLOAT_STORAGE_TYPE
        ml, call = _source(drv.make_launcher), _source(drv.CudaLauncher.__call__)
        appended = re.findall(r'params\.append\("([^"]*)"\)', ml)
        if appended != ["&global_scratch", "&profile_scratch"]:
            return None, "the C launcher appends %s to the kernel's arguments" % appended
        for text in ('if ty == "constexpr": continue', 'output.append("nvTmaDesc")',
                     "config.gridDimX = gridX * num_ctas;", "config.blockDimX = 32 * num_warps;",
                     "CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION, .value = 1",
                     "CU_LAUNCH_ATTRIBUTE_COOPERATIVE, .value = 1",
                     "clusterAttr.value.clusterDim.x = num_ctas;",
                     "CU_CLUSTER_SCHEDULING_POLICY_SPREAD", "if (num_ctas == 16)",
                     "cuLaunchKernelExHandle(&config, function, params, 0)",
                     "_Alignas(128) CUtensorMap tensorMap;"):
            if text not in ml:
                return None, "its C launcher has no '%s'" % text
        for text in ("alloc_size = grid_size * self.num_ctas * size",
                     "self.launch(gridX, gridY, gridZ, stream, function, "
                     "self.launch_cooperative_grid, self.launch_pdl, global_scratch, "
                     "profile_scratch, *args)"):
            if text not in call:
                return None, "CudaLauncher.__call__ has no '%s'" % text
        if "launcher_cls(self.src, self.metadata)" not in _source(compiler.CompiledKernel):
            return None, "CompiledKernel does not make its launcher from launcher_cls"
    except (ImportError, OSError, TypeError) as e:   # no module, no source to read
        return None, "%s: %s" % (type(e).__name__, e)
    return (comp, drv, build, knobs), None


def _make_cubin(self, src, metadata, opt, capability):
    """CUDABackend.make_cubin without ptxas: the PTX, NUL-terminated, which
    the driver module's cuModuleLoadData compiles with the driver's JIT"""
    return src.encode() + b"\0" if isinstance(src, str) else src


def _no_compiler(name, *args):
    raise RuntimeError("pkb: Triton asked for a C module (%s) in the sandbox, where no compiler "
                       "can run; pkb_triton.py covers Triton 3.6's launcher and driver module"
                       % name)


def _release(version):
    return tuple(int(x) for x in version.split(".")[:2])


def _pin_ptx(comp, knobs, arch, cu):
    """Pin what Triton asks ptxas (get_ptxas, get_ptxas_version): the PTX
    version is the lower of ptxas's CUDA release and the driver's, since the
    driver's JIT, not ptxas, compiles the PTX. ptxas runs here (--version),
    before the sandbox, or not at all. Returns the PTX's CUDA release."""
    v = ctypes.c_int(0)
    st = cu.cuDriverGetVersion(ctypes.byref(v))
    if st:
        raise _cu_error(cu, st)
    driver = (v.value // 1000, v.value % 1000 // 10)
    try:
        tool = comp.get_ptxas(arch)
        path, text = tool.path, comp.get_ptxas_version(arch)
        rel = min(driver, _release(tool.version))
    except Exception as e:   # no ptxas: none is run anyway
        path, text, rel = "", "no ptxas (%s)" % e, driver
    rel = "%d.%d" % rel
    comp.ptx_get_version(rel)   # raises below CUDA 10
    pinned = knobs.NvidiaTool(path, rel)
    key = "%s\npkb: PTX of CUDA %s for the JIT of a CUDA %d.%d driver" % (text, rel, *driver)
    comp.get_ptxas = lambda arch: pinned
    comp.get_ptxas_version = lambda arch=80: key
    return rel


class ProcessRefused(RuntimeError):
    pass


@contextlib.contextmanager
def _no_process():
    """Python's ways to start a process raise ProcessRefused meanwhile, and
    each is listed in what it yields (caught and dropped by the caller or
    not, a start left after the priming is SIGSYS in the sandbox)"""
    import subprocess
    refused = []

    def refuse(what):
        def f(*a, **k):
            argv = a[1] if what == "subprocess" else a[:1]
            if isinstance(argv, (list, tuple)):
                argv = " ".join(str(x) for x in argv)
            refused.append("%s: %s" % (what, argv))
            raise ProcessRefused(refused[-1])
        return f

    saved = [(subprocess.Popen, "_execute_child", "subprocess")]
    saved += [(os, n, "os." + n) for n in ("system", "popen", "posix_spawn", "posix_spawnp",
                                           "fork", "forkpty", "execv", "execve")
              if hasattr(os, n)]
    saved = [(obj, name, getattr(obj, name), what) for obj, name, what in saved]
    try:
        for obj, name, _, what in saved:
            setattr(obj, name, refuse(what))
        yield refused
    finally:
        for obj, name, orig, _ in saved:
            setattr(obj, name, orig)


def _probe_kernel(triton, tl):
    @triton.jit
    def pkb_probe(out_ptr, n, scale, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, offs.to(tl.float32) * scale, mask=offs < n)
    return pkb_probe


def _probe(triton, torch, device):
    """A kernel through Triton's compile and pkb's launcher, its result
    checked: a pointer, an i32, an fp32 and a constexpr. "" or why not."""
    n, block = 300, 128
    out = torch.zeros(n + 8, dtype=torch.float32, device=device)
    _probe_kernel(triton, triton.language)[(triton.cdiv(n, block),)](out, n, 0.5, BLOCK=block)
    torch.cuda.synchronize(device)
    got = out.cpu().tolist()
    want = [i * 0.5 for i in range(n)] + [0.0] * 8
    bad = [i for i, (g, w) in enumerate(zip(got, want)) if g != w]
    if bad or len(got) != len(want):
        i = bad[0] if bad else min(len(got), len(want))
        return ("pkb's Triton launcher is wrong: its probe kernel wrote %s at %d where %s is due"
                % (got[i] if i < len(got) else "nothing", i, want[i] if i < len(want) else "none"))
    return ""


def _triton_setup(triton, torch, device, cu):
    """setup()'s Triton part, before the sandbox (above): "" or why not"""
    mods, why = _triton_layout(triton)
    if why:
        return ("Triton %s is not the Triton pkb's launcher copies (3.6): %s; its kernels would "
                "start processes in the sandbox" % (getattr(triton, "__version__", "?"),
                                                    why.replace("\n", " ")))
    comp, drv, build, knobs = mods
    active = triton.runtime.driver.active
    active.utils   # noqa: B018 -- the driver module: gcc, ldconfig, file
    drv.library_dirs()      # (ldconfig) and
    build.platform_key()    # (file): cached now, as the build asked them
    target = active.get_current_target()
    rel = _pin_ptx(comp, knobs, target.arch, cu)
    comp.CUDABackend.make_cubin = _make_cubin
    launcher = _launcher_class(drv, cu)
    drv.CudaLauncher = launcher   # a CudaDriver made later takes it too
    active.launcher_cls = launcher
    knobs.build.impl = _no_compiler
    refused = []
    try:
        with _no_process() as refused:
            why = _probe(triton, torch, device)
    except Exception as e:   # the traceback to the rank's log, the reason in one line
        import traceback
        traceback.print_exc(file=sys.stderr)
        why = "pkb's probe kernel through Triton %s failed: %s: %s" % (
            triton.__version__, type(e).__name__, str(e).strip().replace("\n", " "))
    if refused:
        why = ("Triton %s still starts a process after pkb's priming (%s): the sandbox would "
               "kill it" % (triton.__version__, refused[0]))
    if not why:
        print("pkb_triton: Triton %s for sm_%s, PTX of CUDA %s to the driver's JIT, pkb's launcher"
              % (triton.__version__, target.arch, rel), file=sys.stderr)
    return why


# ---- the entry points (src/solhost.c) --------------------------------------

def _guard(fn):
    def run(arg):
        try:
            r = fn(json.loads(arg) if arg else {})
            return r or ""
        except BaseException as e:   # the candidate's exception, as a message
            import traceback
            traceback.print_exc(file=sys.stderr)
            return "%s: %s" % (type(e).__name__, e) or "error"
    return run


@_guard
def setup(a):
    scratch = a["scratch"]
    os.environ["TRITON_CACHE_DIR"] = os.path.join(scratch, "triton")
    os.environ["TRITON_HOME"] = scratch
    os.environ["TMPDIR"] = scratch
    tempfile.tempdir = scratch   # not a folder asked for earlier: the sandbox keeps scratch only
    torch = importlib.import_module("torch")
    _S.update(torch=torch, rank=a["rank"], world=a["world"], symm={}, handles={},
              streams={}, device=torch.device("cuda", a["device"]),
              cb=_callbacks(a["cb"]))
    torch.cuda.set_device(a["device"])
    dist = importlib.import_module("torch.distributed")
    symm_mem = importlib.import_module("torch.distributed._symmetric_memory")
    _install_dist(dist, symm_mem)
    if a.get("triton", True):
        return _triton_setup(importlib.import_module("triton"), torch, _S["device"], _libcuda())


def _bind(fn, ins, params):
    """solution()'s arguments: by name where its signature names every one
    (the problem's names, pkb show), else the inputs in order, then the
    parameters in order."""
    named = dict(ins)
    named.update(params)
    try:
        sig = inspect.signature(fn)
        names = [p.name for p in sig.parameters.values()
                 if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
        varargs = any(p.kind == p.VAR_POSITIONAL for p in sig.parameters.values())
    except (TypeError, ValueError):
        names, varargs = [], True
    if names and not varargs and all(n in named for n in names):
        return [], {n: named[n] for n in names}
    return [t for _, t in ins] + [v for _, v in params], {}


@_guard
def load(a):
    spec = importlib.util.spec_from_file_location("solution_mod", a["path"])
    mod = importlib.util.module_from_spec(spec)
    sys.modules["solution_mod"] = mod
    spec.loader.exec_module(mod)
    fn = getattr(mod, "solution", None)
    if not callable(fn):
        return "the candidate defines no solution() (the original's solution format)"
    _S.update(mod=mod, fn=fn)


@_guard
def init(a):
    return ""


def _stream(handle):
    torch = _S["torch"]
    if handle not in _S["streams"]:
        _S["streams"][handle] = torch.cuda.ExternalStream(handle, device=_S["device"])
    return _S["streams"][handle]


@_guard
def call(a):
    torch = _S["torch"]
    ins = [(t["name"], tensor(t["ptr"], t["shape"], t["dtype"])) for t in a["in"]]
    params = [(p["name"], int(p["value"]) if float(p["value"]).is_integer() else p["value"])
              for p in a["params"]]
    outs = [tensor(t["ptr"], t["shape"], t["dtype"]) for t in a["out"]]
    args, kwargs = _bind(_S["fn"], ins, params)
    with torch.cuda.stream(_stream(a["stream"])):
        got = _S["fn"](*args, **kwargs)
        got = list(got) if isinstance(got, (tuple, list)) else [got]
        if len(got) != len(outs):
            return "solution() returned %d tensors where the problem has %d outputs" % (
                len(got), len(outs))
        for i, (o, g) in enumerate(zip(outs, got)):
            if not isinstance(g, torch.Tensor):
                return "solution()'s output %d is a %s, not a tensor" % (i, type(g).__name__)
            if tuple(g.shape) != tuple(o.shape) or g.dtype != o.dtype:
                return ("solution()'s output %d is %s %s where %s %s is due"
                        % (i, _torch_dtype_name(g.dtype), tuple(g.shape),
                           _torch_dtype_name(o.dtype), tuple(o.shape)))
            o.copy_(g)


@_guard
def fini(a):
    _S.pop("fn", None)
    _S.pop("mod", None)
    sys.modules.pop("solution_mod", None)
