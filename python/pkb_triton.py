"""pkb_triton -- pkb's host for a `triton` candidate (docs/BACKENDS.md).

pkb's own code, never model-written: the solution process (`pkb __sol`,
src/solhost.c) embeds Python (src/pybridge.c) and calls this module's
functions, each with one JSON string, each returning "" or an error message.

  setup(json)  before the sandbox: imports torch and Triton on this rank's
               GPU, points Triton's cache at the process's scratch folder,
               hands Triton's PTX to the driver's JIT (no ptxas process: the
               sandbox starts none), and installs what the original's
               solutions call of torch.distributed and its symmetric memory,
               served by pkb (below)
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
import ctypes
import importlib.util
import inspect
import json
import math
import os
import sys
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


def _ptx_to_driver(triton):
    """Triton's ptxas step returns the PTX itself: the driver compiles it
    when Triton loads the module (cuModuleLoadData takes PTX), so no
    process is started inside the sandbox. False when this Triton's
    backend has no make_cubin to replace (the log says so)."""
    try:
        from triton.backends.nvidia.compiler import CUDABackend
    except Exception as e:   # another Triton layout
        print("pkb_triton: cannot reach Triton's CUDA backend (%s): ptxas would run" % e,
              file=sys.stderr)
        return False

    def make_cubin(self, src, metadata, opt, capability):
        return src.encode() + b"\0" if isinstance(src, str) else src

    CUDABackend.make_cubin = make_cubin
    return True


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
    torch = importlib.import_module("torch")
    _S.update(torch=torch, rank=a["rank"], world=a["world"], symm={}, handles={},
              streams={}, device=torch.device("cuda", a["device"]),
              cb=_callbacks(a["cb"]))
    torch.cuda.set_device(a["device"])
    dist = importlib.import_module("torch.distributed")
    symm_mem = importlib.import_module("torch.distributed._symmetric_memory")
    _install_dist(dist, symm_mem)
    if a.get("triton", True):
        triton = importlib.import_module("triton")
        _ptx_to_driver(triton)
        # Triton's driver module is compiled (a C compiler, once per
        # process: its cache is the scratch folder) before the sandbox
        triton.runtime.driver.active.utils  # noqa: B018


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
