"""tests/cli/t0127-triton-launcher.py -- python/pkb_triton.py's Triton part without
a GPU or torch (run by t0127-triton-launcher.sh with a Python that imports Triton).

Triton's driver is a stand-in (a CudaDriver with no C module: load_binary,
the device and the stream are the test's) and so is libcuda: the driver
calls pkb's launcher makes are ctypes callbacks here, which read the
CUlaunchConfig, its attributes and the kernel's parameters from memory as
the driver would, and check each parameter against the .param list of the
kernel's own PTX. An audit hook sees every process start: the priming in
_triton_setup may start some (ptxas --version, file), nothing after it may.
Prints "t0127-triton-launcher.py: N passed, N failed".
"""
import atexit
import ctypes
import os
import re
import shutil
import struct
import sys
import tempfile

ROOT = sys.argv[1]
sys.path.insert(0, os.path.join(ROOT, "python"))
TMP = tempfile.mkdtemp(prefix="pkb-triton-test.")
atexit.register(shutil.rmtree, TMP, True)
os.environ.update(TRITON_CACHE_DIR=os.path.join(TMP, "cache"), TRITON_HOME=TMP,
                  TRITON_LIBCUDA_PATH=TMP)   # no libcuda here: ldconfig would find none

_pass, _fail = 0, 0


def check(cond, what):
    global _pass, _fail
    if cond:
        _pass += 1
    else:
        _fail += 1
        print("FAIL t0127-triton-launcher.py: %s" % what, file=sys.stderr)


# ---- process starts: allowed while priming, refused (and counted) after -----

PHASE = {"now": "import", "late": []}
PROCESS_EVENTS = ("subprocess.Popen", "os.system", "os.posix_spawn", "os.fork", "os.forkpty",
                  "os.exec", "os.spawn")


def audit(event, args):
    if event in PROCESS_EVENTS:
        argv = args[1] if event == "subprocess.Popen" else args
        PHASE.setdefault(PHASE["now"], []).append((event, " ".join(map(str, argv))[:200]))
        if PHASE["now"] == "sandbox":
            PHASE["late"].append(PHASE[PHASE["now"]][-1])
            raise RuntimeError("test: a process start after the priming: %s %r" % (event, args))


sys.addaudithook(audit)

import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.backends.nvidia import driver as drv  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
import pkb_triton  # noqa: E402

_, why = pkb_triton._triton_layout(triton)
if why:   # another Triton: refused in one line, before anything is changed
    msg = pkb_triton._triton_setup(triton, None, 0, None)
    check(msg.startswith("Triton %s is not the Triton pkb's launcher copies (3.6): "
                         % triton.__version__) and "\n" not in msg, "the refusal: %r" % msg)
    print("t0127-triton-launcher.py: the rest skipped: Triton %s is not 3.6's layout: %s"
          % (triton.__version__, why))
    print("t0127-triton-launcher.py: %d passed, %d failed" % (_pass, _fail))
    sys.exit(1 if _fail else 0)

# ---- memory standing in for the device's --------------------------------------

HOST_ONLY = set()   # addresses cuPointerGetAttribute calls host memory


class Dtype:
    def __init__(self, name, size, fmt):
        self.name, self.itemsize, self.fmt = name, size, fmt
        self.is_floating_point = fmt in "efd"

    def __str__(self):
        return "torch." + self.name


F32 = Dtype("float32", 4, "f")
F16 = Dtype("float16", 2, "e")


class Tensor:
    """host memory at a raw address, with what Triton's specialisation reads"""

    def __init__(self, n, dtype=F32):
        self.buf = (ctypes.c_char * (n * dtype.itemsize + 256))()
        base = ctypes.addressof(self.buf)
        self.ptr = base + (-base) % 128
        self.n, self.dtype, self.shape = n, dtype, (n,)

    def data_ptr(self):
        return self.ptr

    def stride(self):
        return (1,)

    def cpu(self):
        return self

    def tolist(self):
        return list(struct.unpack("<%d%s" % (self.n, self.dtype.fmt),
                                  ctypes.string_at(self.ptr, self.n * self.dtype.itemsize)))


class FakeTorch:
    float32 = F32

    class cuda:
        synced = []

        @staticmethod
        def synchronize(device=None):
            FakeTorch.cuda.synced.append(device)

    @staticmethod
    def zeros(n, dtype=F32, device=None):
        return Tensor(n, dtype)


# ---- Triton's driver without its C module -----------------------------------

class FakeMap:
    """a stand-in PyCUtensorMap: 16 bytes of header and 30 slots, 256 bytes
    as the C type's, the map 128 bytes in"""
    __slots__ = tuple("s%d" % i for i in range(30))


def aligned_map():
    keep = []
    while True:
        m = FakeMap()
        if id(m) % 128 == 0:
            return m
        keep.append(m)


KERNELS = {}   # function handle -> (name, [(ptx type, bytes)], ptx)


def ptx_params(ptx, name):
    body = re.search(r"\.entry %s\((.*?)\)" % re.escape(name), ptx, re.S).group(1)
    out = []
    for line in body.split(","):
        line = line.strip()
        if not line:
            continue
        arr = re.search(r"\.b8 \w+\[(\d+)\]", line)
        if arr:
            out.append(("b8[]", int(arr.group(1))))
            continue
        ty = re.search(r"\.param \.(\w+)", line).group(1)
        out.append((ty, int(re.sub(r"\D", "", ty)) // 8))
    return out


class Utils:
    def __init__(self):
        self.maps = []

    def load_binary(self, name, kernel, shared, device):
        assert kernel.endswith(b"\0"), "not NUL-terminated PTX"
        ptx = kernel[:-1].decode()
        handle = 0x1000 + 16 * len(KERNELS)
        KERNELS[handle] = (name, ptx_params(ptx, name), ptx)
        return (0x9000, handle, 32, 0, 1024)

    def get_device_properties(self, device):
        return {"max_shared_mem": 232448, "multiprocessor_count": 132}

    def fill_tma_descriptor(self, ptr, swizzle, elem_size, elem_type, block, shape, strides,
                            padding):
        m = aligned_map()
        self.maps.append((m, ptr, tuple(block)))
        return m


STREAM = 0x5eed
active = object.__new__(drv.CudaDriver)   # no CudaUtils: no gcc, no libcuda
active.utils = Utils()
active.launcher_cls = drv.CudaLauncher
active.get_current_device = lambda: 0
active.get_current_stream = lambda device=None: STREAM
active.get_device_capability = lambda device=None: (9, 0)
triton.runtime.driver.set_active(active)
drv.PyCUtensorMap = FakeMap


# ---- libcuda, as ctypes callbacks --------------------------------------------

LOG = []           # the calls, in order
LAUNCHES = []      # what each cuLaunchKernelEx was given
STATE = {"ctx": 0xC0, "launch_rc": 0, "probe_wrong": False, "driver": 12040}
ERRSTR = {}


def decode_param(ty, raw):
    if ty == "b8[]":   # a TMA map (128 bytes) stays bytes; fp16/bf16 are .b8 [2]
        return raw if len(raw) > 8 else int.from_bytes(raw, "little")
    if ty.startswith("f"):
        return struct.unpack("<f" if len(raw) == 4 else "<d", raw)[0]
    return int.from_bytes(raw, "little", signed=ty.startswith("s"))


def fake_launch(cfg_p, function, params, extra):
    cfg = cfg_p.contents
    name, plist, ptx = KERNELS[function]
    raw, ptrs = [], []
    for i, (ty, size) in enumerate(plist):
        ptrs.append(params[i])
        raw.append(decode_param(ty, ctypes.string_at(params[i], size)))
    attrs = {}
    for i in range(cfg.numAttrs):
        a = cfg.attrs[i]
        attrs[a.id] = tuple(a.value.u32[:3])
    rec = dict(name=name, function=function, grid=(cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ),
               block=(cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ), shared=cfg.sharedMemBytes,
               stream=cfg.hStream, attrs=attrs, params=raw, ptrs=ptrs, types=plist,
               extra=extra)
    LAUNCHES.append(rec)
    LOG.append("launch " + name)
    if name == "pkb_probe":   # the probe kernel, run here: out[i] = i * scale, i < n
        out, n, scale = raw[0], raw[1], raw[2]
        block = 128
        for i in range(min(n, cfg.gridDimX * block)):
            v = i * scale + (1.0 if STATE["probe_wrong"] and i == 7 else 0.0)
            ctypes.memmove(out + 4 * i, struct.pack("<f", v), 4)
    return STATE["launch_rc"]


def fake_pointer(data, attr, ptr):
    LOG.append("pointer %#x" % ptr)
    if attr != 3:
        return 1
    if ptr in HOST_ONLY:
        return 1
    ctypes.c_uint64.from_address(data).value = ptr
    return 0


def fake_ctx_get(p):
    p[0] = STATE["ctx"] or None
    return 0


def fake_device_get(p, ordinal):
    LOG.append("cuDeviceGet %d" % ordinal)
    p[0] = 0
    return 0


def fake_retain(p, dev):
    LOG.append("cuDevicePrimaryCtxRetain %d" % dev)
    p[0] = 0xC1
    return 0


def fake_set_current(ctx):
    LOG.append("cuCtxSetCurrent %#x" % (ctx or 0))
    return 0


def fake_func_set_attr(f, attr, value):
    LOG.append("cuFuncSetAttribute %#x %d %d" % (f, attr, value))
    return 0


def fake_error_string(code, p):
    ERRSTR[code] = ctypes.create_string_buffer(b"fake error %d" % code)
    p[0] = ctypes.cast(ERRSTR[code], ctypes.c_char_p)
    return 0


def fake_driver_version(p):
    p[0] = STATE["driver"]
    return 0


FAKES = dict(cuLaunchKernelEx=fake_launch, cuPointerGetAttribute=fake_pointer,
             cuCtxGetCurrent=fake_ctx_get, cuDeviceGet=fake_device_get,
             cuDevicePrimaryCtxRetain=fake_retain, cuCtxSetCurrent=fake_set_current,
             cuFuncSetAttribute=fake_func_set_attr, cuGetErrorString=fake_error_string,
             cuDriverGetVersion=fake_driver_version)
CALLBACKS = {name: ctypes.CFUNCTYPE(res, *args)(FAKES[name])
             for name, res, args in pkb_triton.CU_FUNCS}
cu = pkb_triton.cu_table(lambda name: ctypes.cast(CALLBACKS[name], ctypes.c_void_p).value)


# ---- the priming: setup's Triton part -----------------------------------------

PHASE["now"] = "priming"
why = pkb_triton._triton_setup(triton, FakeTorch, 0, cu)
PHASE["now"] = "sandbox"   # from here on, as in the solution process's sandbox
check(why == "", "the priming failed: %s" % why)
print("t0127-triton-launcher.py: the priming started %d processes: %s"
      % (len(PHASE.get("priming", [])), "; ".join(a for _, a in PHASE.get("priming", []))))
check(drv.CudaLauncher.__name__ == "PkbCudaLauncher" and
      active.launcher_cls is drv.CudaLauncher, "Triton's C launcher is still in place")
check(triton.knobs.build.impl is pkb_triton._no_compiler, "knobs.build.impl is not pkb's")
check(FakeTorch.cuda.synced == [0], "the probe did not synchronise its device")
probe = [r for r in LAUNCHES if r["name"] == "pkb_probe"]
check(len(probe) == 1, "the probe kernel was launched %d times" % len(probe))
if probe:
    p = probe[0]
    check(p["grid"] == (3, 1, 1) and p["block"] == (128, 1, 1) and p["stream"] == STREAM,
          "the probe's launch: %s" % p)
    check(p["params"][1:] == [300, 0.5, 0, 0] and len(p["types"]) == 5,
          "the probe's parameters %s (%s)" % (p["params"], p["types"]))
    check(".version 8.4" in KERNELS[p["function"]][2],
          "the PTX is not PTX 8.4 (a CUDA 12.4 driver, ptxas 12.8)")
check(pkb_triton._probe(triton, FakeTorch, 0) == "", "the probe fails when run again")
STATE["probe_wrong"] = True
msg = pkb_triton._probe(triton, FakeTorch, 0)
STATE["probe_wrong"] = False
check("wrote 4.5 at 7 where 3.5 is due" in msg, "a wrong probe result is not caught: %r" % msg)


def last():
    return LAUNCHES[-1]


def expect_params(rec, want, what):
    """rec's parameters decoded by its PTX's types against want (None: any)"""
    got = rec["params"]
    ok = len(got) == len(want) and all(w is None or g == w for g, w in zip(got, want))
    check(ok, "%s: parameters %s (PTX %s), expected %s" % (what, got, rec["types"], want))


# ---- kernels through Triton's JIT, as a candidate launches them ---------------

@triton.jit
def sum_ranks(table, out_ptr, n, W: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    ptrs = table.to(tl.pointer_type(tl.uint64))
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for r in tl.static_range(W):
        peer = tl.load(ptrs + r).to(tl.pointer_type(out_ptr.dtype.element_ty))
        acc += tl.load(peer + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + offs, acc.to(out_ptr.dtype.element_ty), mask=mask)


out = Tensor(4096)
table = 0x7f12_3456_7000
sum_ranks[(2,)](table, out, 4000, W=2, BLOCK=2048)
expect_params(last(), [table, out.ptr, 4000, 0, 0], "001's kernel")
check(last()["grid"] == (2, 1, 1) and last()["block"] == (128, 1, 1) and last()["attrs"] == {},
      "001's launch: %s" % last())


@triton.jit
def scalars(out_ptr, flag, a, b, c, d, pair, one, x, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = (flag.to(tl.float32) + a + b.to(tl.float32) + c.to(tl.float32) + d.to(tl.float32)
         + pair[1] + one + x)
    tl.store(out_ptr + offs + pair[0], v + tl.load(pair[2] + offs))


src = Tensor(256)
scalars[(1,)](out, True, -5, 1 << 40, (1 << 63) + 5, -(1 << 40), (3, 2.5, src), 1, 0.1,
              BLOCK=64, num_warps=2)
r = last()
# flag i1 (1 byte), a i32, b i64, c u64, d i64; pair: i32, fp32, ptr; one: constexpr; x fp32
expect_params(r, [out.ptr, 1, (-5) & 0xffffffff, 1 << 40, (1 << 63) + 5, (-(1 << 40)) & (2**64 - 1),
                  3, 2.5, src.ptr, struct.unpack("<f", struct.pack("<f", 0.1))[0], 0, 0],
              "scalars, a tuple and a constexpr")
check(r["block"] == (64, 1, 1), "num_warps=2 is not 64 threads: %s" % (r["block"],))

# launch options: PDL, cooperative, clusters (the attributes), 16-CTA clusters
scalars[(4, 2, 1)](out, False, 1, 2, 3, 4, (0, 0.0, src), 1, 0.0, BLOCK=64,
                   launch_pdl=True, launch_cooperative_grid=True, num_ctas=2)
r = last()
check(r["grid"] == (8, 2, 1), "num_ctas=2 does not double grid x: %s" % (r["grid"],))
check(r["attrs"] == {6: (1, 0, 0), 2: (1, 0, 0), 4: (2, 1, 1), 5: (1, 0, 0)},
      "the launch attributes: %s" % r["attrs"])
n_log = len(LOG)
scalars[(16,)](out, False, 1, 2, 3, 4, (0, 0.0, src), 1, 0.0, BLOCK=64, num_ctas=16)
check(any(e.startswith("cuFuncSetAttribute") and e.endswith(" 14 1") for e in LOG[n_log:]),
      "num_ctas=16 does not allow non-portable clusters: %s" % LOG[n_log:])
check(last()["grid"] == (256, 1, 1) and last()["attrs"][4] == (16, 1, 1),
      "16-CTA clusters: %s" % last())

# launch hooks: enter before the launch, exit after, with the launch metadata
seen = []
enter = lambda md: seen.append(("enter", md.get()["name"]))  # noqa: E731
leave = lambda md: seen.append(("exit", md.get()["name"]))  # noqa: E731
triton.knobs.runtime.launch_enter_hook.add(enter)
triton.knobs.runtime.launch_exit_hook.add(leave)
n_log = len(LOG)
sum_ranks[(1,)](table, out, 100, W=2, BLOCK=2048)
check(seen == [("enter", "sum_ranks"), ("exit", "sum_ranks")], "the hooks: %s" % seen)
sum_ranks[(0,)](table, out, 100, W=2, BLOCK=2048)   # an empty grid: hooks, no launch
check(len(seen) == 4 and LOG[n_log:].count("launch sum_ranks") == 1,
      "an empty grid: %s %s" % (seen, LOG[n_log:]))
triton.knobs.runtime.launch_enter_hook.remove(enter)
triton.knobs.runtime.launch_exit_hook.remove(leave)

# errors: a host pointer, a failed launch, a missing context
host = Tensor(4096)
HOST_ONLY.add(host.ptr)
try:
    sum_ranks[(1,)](table, host, 100, W=2, BLOCK=2048)
    check(False, "a host pointer was launched")
except ValueError as e:
    check("Pointer argument (at 1) cannot be accessed from Triton (cpu tensor?)" in str(e),
          "a host pointer: %s" % e)
STATE["launch_rc"] = 700
try:
    sum_ranks[(1,)](table, out, 100, W=2, BLOCK=2048)
    check(False, "a failed launch raised nothing")
except RuntimeError as e:
    check(str(e) == "Triton Error [CUDA]: fake error 700", "a failed launch: %s" % e)
STATE["launch_rc"] = 0
STATE["ctx"] = 0
n_log = len(LOG)
sum_ranks[(1,)](table, out, 100, W=2, BLOCK=2048)
STATE["ctx"] = 0xC0
check([e for e in LOG[n_log:] if e.startswith("cu")] ==
      ["cuDeviceGet 0", "cuDevicePrimaryCtxRetain 0", "cuCtxSetCurrent 0xc1"],
      "no current context: %s" % LOG[n_log:])


# global scratch: a device-side tensor descriptor
@triton.jit
def device_desc(a_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    desc = tl.make_tensor_descriptor(a_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    x = desc.load([0, 0])
    desc.store([0, 0], x * 2)


try:
    device_desc[(1,)](out, 32, 64, BM=16, BN=32)
    check(False, "a kernel needing scratch launched without an allocator")
except RuntimeError as e:
    check("no allocator was set" in str(e), "no allocator: %s" % e)
asked = []
scratch = Tensor(1 << 14)


def allocator(size, align, stream):
    asked.append((size, align, stream))
    return scratch


triton.set_allocator(allocator)
device_desc[(3, 1, 1)](out, 32, 64, BM=16, BN=32)
r = last()
md = [k for k in device_desc.device_caches[0][0].values()][0].metadata
check(md.global_scratch_size > 0 and asked == [(3 * md.global_scratch_size,
                                                md.global_scratch_align, STREAM)],
      "the scratch asked for: %s (size %d)" % (asked, md.global_scratch_size))
check(r["params"][-2:] == [scratch.ptr, 0], "the scratch pointers: %s" % r["params"])


# a host tensor descriptor: the TMA map, then shape and strides
@triton.jit
def host_desc(desc, out_ptr, BM: tl.constexpr, BN: tl.constexpr):
    x = desc.load([0, 0])
    offs = tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :]
    tl.store(out_ptr + offs, x)


from triton.tools.tensor_descriptor import TensorDescriptor  # noqa: E402

base = Tensor(64 * 64)
host_desc[(1,)](TensorDescriptor(base, [64, 64], [64, 1], [16, 32]), out, BM=16, BN=32)
r = last()
m, ptr, block = active.utils.maps[-1]
check(ptr == base.ptr and block == (16, 32), "fill_tma_descriptor got %s %s" % (ptr, block))
check(r["types"][0] == ("b8[]", 128) and r["ptrs"][0] == id(m) + 128,
      "the TMA map is not passed in place: %s, %#x vs %#x" % (r["types"][0], r["ptrs"][0],
                                                              id(m) + 128))
expect_params(r, [None, 64, 64, 64, 1, out.ptr, 0, 0], "a host tensor descriptor")


# ---- scalars of every type, through triton.compile's own signature -------------

@triton.jit
def typed(out_ptr, h, bf, d, i8, i16, u8, u16, u32, f):
    v = h.to(tl.float32) + bf.to(tl.float32) + d.to(tl.float32) + i8 + i16 + u8 + u16 + u32 + f
    tl.store(out_ptr, v)


sig = {"out_ptr": "*fp32", "h": "fp16", "bf": "bf16", "d": "fp64", "i8": "i8", "i16": "i16",
       "u8": "u8", "u16": "u16", "u32": "u32", "f": "fp32"}
ck = triton.compile(ASTSource(fn=typed, signature=sig, constexprs={}),
                    target=GPUTarget("cuda", 90, 32))
ck[(1, 1, 1)](out, 1.5, 1.00390625 + 2**-10, 1e300, 100, -300, 255, 65535, 2**32 - 1, -2.0)
bf_bits = struct.unpack("<I", struct.pack("<f", 1.00390625 + 2**-10))[0] >> 16
expect_params(last(), [out.ptr, struct.unpack("<H", struct.pack("<e", 1.5))[0], bf_bits, 1e300,
                       100, (-300) & 0xffff, 255, 65535, 2**32 - 1, -2.0, 0, 0],
              "fp16, bf16, fp64 and small ints")


# ---- the sandbox's view: no process, no C compiler ----------------------------

check(PHASE["late"] == [], "processes started after the priming: %s" % PHASE["late"])
try:
    drv.compile_module_from_src(src="int pkb_probe_mod;", name="pkb_probe_mod")
    check(False, "a C module was built after the priming")
except RuntimeError as e:
    check("pkb: Triton asked for a C module (pkb_probe_mod)" in str(e), "the C module: %s" % e)
check(PHASE["late"] == [], "the C module started a process: %s" % PHASE["late"])

# _no_process: Python's ways to start one raise, and come back after
import subprocess  # noqa: E402

PHASE["now"] = "guard"
for start in (lambda: subprocess.run(["true"]), lambda: os.system("true"),
              lambda: os.posix_spawn("/bin/true", ["true"], {})):
    try:
        with pkb_triton._no_process():
            start()
        check(False, "_no_process let a process start")
    except pkb_triton.ProcessRefused:
        check(True, "")
check(PHASE.get("guard", []) == [] and subprocess.Popen._execute_child.__name__ ==
      "_execute_child", "_no_process: %s" % PHASE.get("guard"))

# another Triton: refused in one line
saved = drv._BASE_ARGS_FORMAT
drv._BASE_ARGS_FORMAT = "iiiKKpOOOOO"
why = pkb_triton._triton_setup(triton, FakeTorch, 0, cu)
drv._BASE_ARGS_FORMAT = saved
check(why.startswith("Triton %s is not the Triton pkb's launcher copies (3.6): the C launcher's "
                     "arguments are 'iiiKKpOOOOO'" % triton.__version__) and "\n" not in why,
      "another launcher layout: %r" % why)

print("t0127-triton-launcher.py: %d passed, %d failed" % (_pass, _fail))
sys.exit(1 if _fail else 0)
