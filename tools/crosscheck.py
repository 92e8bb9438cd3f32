#!/usr/bin/env python3
"""tools/crosscheck.py -- run the ORIGINAL ParallelKernelBench reference of a
problem on the inputs pkb generated, and write its outputs beside pkb's.

    tools/crosscheck.py --orig CHECKOUT --ours DIR --out DIR2 --world W

DIR is a `pkb run ID --save DIR` folder (rank_R_inputs/outputs.safetensors,
with the problem, world, shape, dtype and trial in their metadata). Each of
W processes (one per GPU, NCCL, as the original's own worker starts them)
builds the original's argument tuple with the original's
create_input_tensor(), replaces every tensor in it, in order, by pkb's input
of the same position (and a Python number by pkb's 0-dim input where pkb has
one there), calls the original's solution(*args), and writes its outputs
under pkb's output names into DIR2/rank_R_outputs.safetensors, which
`pkb compare DIR DIR2` then judges with the problem's own tolerances.

What did not line up is said, not guessed: DIR2/rank_R_report.json holds
{"status": "ok" | "layout" | "error", "detail": ..., "notes": [...]}
(and with --time "perf": the original's own timing of its reference on
this rank, utils/performance.py's figures):
"layout" when the original's inputs or outputs do not pair with pkb's (a
count or a shape differs: a deliberate deviation the problem's README
names, or a bug), "error" when the original raised. The original's code
comes from the checkout the user names; nothing of it is copied here.

Only the standard library is needed to import this file (the pure parts are
tested on machines without PyTorch: tests/cli/t0530-crosscheck.sh); torch
is imported by the rank processes.
"""

import argparse
import glob
import importlib.util
import json
import os
import socket
import struct
import sys
import traceback

# safetensors dtype name -> (torch dtype attribute, bytes per element)
ST_DTYPES = {
    "BF16": ("bfloat16", 2), "F16": ("float16", 2), "F32": ("float32", 4),
    "F64": ("float64", 8), "I8": ("int8", 1), "U8": ("uint8", 1),
    "I32": ("int32", 4), "I64": ("int64", 8), "BOOL": ("bool", 1),
    "F8_E4M3": ("float8_e4m3fn", 1), "F8_E5M2": ("float8_e5m2", 1),
    "C64": ("complex64", 8),
}
# pkb's dtype names (--dtype) -> torch's
PKB_DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}


class Layout(Exception):
    """the original's arguments or results do not pair with pkb's"""


def read_st(path):
    """(metadata, [(name, dtype, shape, bytes)]) in pkb's order: the
    metadata's "order" where it has one (JSON objects have none), else the
    data offsets'"""
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        raise ValueError(f"{path}: shorter than a safetensors header")
    (hlen,) = struct.unpack("<Q", raw[:8])
    if hlen > len(raw) - 8:
        raise ValueError(f"{path}: header length {hlen} past the end of the file")
    head = json.loads(raw[8:8 + hlen])
    meta = head.pop("__metadata__", {}) or {}
    base = 8 + hlen
    tensors = []
    for name, e in head.items():
        lo, hi = e["data_offsets"]
        if not (0 <= lo <= hi <= len(raw) - base):
            raise ValueError(f"{path}: tensor '{name}' lies outside the file")
        size = ST_DTYPES[e["dtype"]][1]
        numel = 1
        for s in e["shape"]:
            numel *= s
        if numel * size != hi - lo:
            raise ValueError(f"{path}: tensor '{name}' has {hi - lo} bytes, its shape wants {numel * size}")
        tensors.append((name, e["dtype"], list(e["shape"]), raw[base + lo:base + hi], lo))
    order = [s for s in meta.get("order", "").split(",") if s]
    if sorted(order) == sorted(t[0] for t in tensors):
        tensors.sort(key=lambda t: order.index(t[0]))
    else:
        tensors.sort(key=lambda t: t[4])
    return meta, [t[:4] for t in tensors]


def write_st(path, tensors, meta):
    """tensors: [(name, dtype, shape, bytes)]; written in that order, the
    header padded to 8 bytes as pkb's reader wants, atomically"""
    head, off = {}, 0
    if meta:
        head["__metadata__"] = {k: str(v) for k, v in meta.items()}
    for name, dt, shape, data in tensors:
        head[name] = {"dtype": dt, "shape": list(shape), "data_offsets": [off, off + len(data)]}
        off += len(data)
    h = json.dumps(head, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for t in tensors:
            f.write(t[3])
    os.replace(tmp, path)


def substitute(args, ours, is_tensor, shape_of, take):
    """Replace the tensors of the original's argument tuple `args` (nested
    in lists, tuples and dicts too) by pkb's inputs `ours` ([(name, dtype,
    shape, bytes)]) in order; a Python int or float of the original takes
    pkb's next input when that one is 0-dim (a trial-dependent scalar pkb
    passes as a tensor). take(i, leaf) makes pkb's input i into what
    replaces leaf. Returns (new args, notes); raises Layout when a shape or
    the count differs."""
    pos = [0]
    notes = []

    def walk(v):
        if is_tensor(v):
            i = pos[0]
            if i >= len(ours):
                raise Layout(f"the original has more tensor arguments than pkb's {len(ours)} inputs")
            name, _, shape, _ = ours[i]
            if list(shape_of(v)) != list(shape):
                raise Layout(f"input {i} '{name}': the original's shape is {list(shape_of(v))}, pkb's {list(shape)}")
            pos[0] += 1
            return take(i, v)
        if isinstance(v, bool) or v is None or isinstance(v, (str, bytes)):
            return v
        if isinstance(v, (int, float)):
            i = pos[0]
            if i < len(ours) and ours[i][2] == []:
                pos[0] += 1
                return take(i, v)
            notes.append(f"the original's scalar {v!r} kept")
            return v
        if isinstance(v, (list, tuple)):
            w = [walk(e) for e in v]
            return type(v)(w) if isinstance(v, list) else tuple(w)
        if isinstance(v, dict):
            return {k: walk(e) for k, e in v.items()}
        return v   # process groups, devices, options: the original's own

    new = walk(tuple(args))
    if pos[0] != len(ours):
        left = ", ".join(o[0] for o in ours[pos[0]:])
        raise Layout(f"pkb has inputs the original's arguments lack: {left}")
    return new, notes


def flatten(y, is_tensor):
    """the original's result as a list of leaves in order: tensors and
    Python numbers (a loss returned as a float); None is skipped"""
    if is_tensor(y) or (isinstance(y, (int, float)) and not isinstance(y, bool)):
        return [y]
    if isinstance(y, (list, tuple)):
        return [x for e in y for x in flatten(e, is_tensor)]
    if isinstance(y, dict):
        return [x for e in y.values() for x in flatten(e, is_tensor)]
    return []


def original_solution(orig, pid):
    paths = sorted(glob.glob(os.path.join(orig, "reference", f"{pid}_*.py")))
    if len(paths) != 1:
        raise FileNotFoundError(f"{orig}/reference/{pid}_*.py: {len(paths)} files match, want 1")
    spec = importlib.util.spec_from_file_location(f"pkb_original_{pid}", paths[0])
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.solution, paths[0]


def rank_main(rank, world, opts):
    """one rank: the original's init, inputs (pkb's substituted), solution,
    outputs; its report written whatever happens"""
    report = {"status": "error", "detail": "", "notes": []}
    out_path = os.path.join(opts.out, f"rank_{rank}_outputs.safetensors")
    try:
        import torch
        import torch.distributed as dist

        sys.path.insert(0, opts.orig)
        from utils.init_and_finalize_backends import init_reference, finalize_reference
        from utils.input_output_tensors import create_input_tensor

        meta, ours = read_st(os.path.join(opts.ours, f"rank_{rank}_inputs.safetensors"))
        _, ours_out = read_st(os.path.join(opts.ours, f"rank_{rank}_outputs.safetensors"))
        pid = int(meta["pkb_problem"])
        dtype = getattr(torch, PKB_DTYPES[meta["dtype"]])
        init_reference(rank, world)
        dev = torch.device("cuda", rank)
        solution, ref_path = original_solution(opts.orig, pid)
        report["original"] = os.path.relpath(ref_path, opts.orig)
        args = create_input_tensor(rank, world, pid, (int(meta["m"]), int(meta["n"])), dtype,
                       trial=int(meta.get("trial", 0)), device=dev)
        if not isinstance(args, tuple):
            args = (args,)

        def take(i, leaf):
            name, dt, shape, data = ours[i]
            t = torch.frombuffer(bytearray(data), dtype=getattr(torch, ST_DTYPES[dt][0]))
            t = t.reshape(shape).to(dev)
            if isinstance(leaf, torch.Tensor):
                if leaf.dtype != t.dtype:
                    report["notes"].append(f"input '{name}' cast from {t.dtype} to the original's {leaf.dtype}")
                    t = t.to(leaf.dtype)
                return t.contiguous() if leaf.is_contiguous() else t
            return type(leaf)(t.item())

        args, notes = substitute(args, ours, lambda v: isinstance(v, torch.Tensor),
                     lambda v: v.shape, take)
        report["notes"] += notes
        y = solution(*args)
        torch.cuda.synchronize()
        got = flatten(y, lambda v: isinstance(v, torch.Tensor))
        if len(got) != len(ours_out):
            raise Layout(f"the original returns {len(got)} tensors, pkb's problem {len(ours_out)}")
        written = []
        for (name, dt, shape, _), g in zip(ours_out, got):
            g = torch.as_tensor(g, device=dev)
            n = 1
            for s in shape:
                n *= s
            if list(g.shape) != list(shape):
                if g.numel() != n:
                    raise Layout(f"output '{name}': the original's shape is {list(g.shape)}, pkb's {list(shape)}")
                report["notes"].append(f"output '{name}' reshaped from {list(g.shape)} to {list(shape)}")
                g = g.reshape(shape)
            want = getattr(torch, ST_DTYPES[dt][0])
            if g.dtype != want:
                report["notes"].append(f"output '{name}' cast from {g.dtype} to pkb's {want}")
                g = g.to(want)
            b = g.detach().contiguous().cpu().view(-1).view(torch.uint8).numpy().tobytes()
            written.append((name, dt, shape, b))
        write_st(out_path, written, meta)
        report["status"] = "ok"
        if opts.time:
            report["perf"] = time_original(opts.orig, solution, args, opts.warmup, opts.iters)
        dist.barrier()
        finalize_reference()
    except Layout as e:
        report["status"], report["detail"] = "layout", str(e)
    except Exception as e:
        report["status"] = "error"
        report["detail"] = f"{type(e).__name__}: {e}".splitlines()[0][:400]
        report["traceback"] = traceback.format_exc()[-4000:]
    with open(os.path.join(opts.out, f"rank_{rank}_report.json"), "w") as f:
        json.dump(report, f, indent=1)
    # a rank that failed must not leave the others waiting in a collective:
    # the parent sees the report and ends the group
    os._exit(0 if report["status"] == "ok" else 1)


def time_original(orig, solution, args, warmup, iters):
    """the original's own timing of its reference, as its worker runs it
    with --measure_perf: scripts/worker.py picks the tensor to rotate
    through L2-sized input groups, utils/performance.py times it (per-call
    CUDA events after `warmup` calls). The original's summary takes the
    slowest rank's wall_time_ms (a mean over the calls)."""
    spec = importlib.util.spec_from_file_location("pkb_original_worker",
                                                  os.path.join(orig, "scripts", "worker.py"))
    worker = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(worker)
    from utils.performance import measure_solution_performance
    tensor, run_fn = worker._perf_run_fn_and_first_tensor(solution, args)
    m = measure_solution_performance(run_fn, tensor, warmup_iters=warmup, measure_iters=iters)
    return {k: m[k] for k in ("wall_time_ms", "wall_time_std_ms", "min_time_ms", "max_time_ms",
                              "iterations", "warmup_iterations", "num_input_groups")}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--orig", required=True, help="a checkout of the original repository")
    ap.add_argument("--ours", required=True, help="a `pkb run --save` folder")
    ap.add_argument("--out", required=True, help="where the original's outputs go")
    ap.add_argument("--world", type=int, required=True)
    ap.add_argument("--time", action="store_true",
                    help="also time the original's reference as its own worker does")
    ap.add_argument("--warmup", type=int, default=500)
    ap.add_argument("--iters", type=int, default=100)
    opts = ap.parse_args()
    needs = ["utils/input_output_tensors.py", "utils/init_and_finalize_backends.py", "reference"]
    if opts.time:
        needs += ["scripts/worker.py", "utils/performance.py"]
    for need in needs:
        if not os.path.exists(os.path.join(opts.orig, need)):
            sys.exit(f"crosscheck: '{opts.orig}' is not a checkout of the original ParallelKernelBench (no {need})")
    os.makedirs(opts.out, exist_ok=True)
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ["MASTER_PORT"] = str(free_port())
    import multiprocessing as mp
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=rank_main, args=(r, opts.world, opts)) for r in range(opts.world)]
    for p in procs:
        p.start()
    # the first rank to fail ends the rest: they may wait forever in NCCL
    alive = list(procs)
    while alive:
        for p in list(alive):
            p.join(0.2)
            if p.exitcode is not None:
                alive.remove(p)
                if p.exitcode != 0:
                    for q in alive:
                        q.kill()
    sys.exit(0)


if __name__ == "__main__":
    main()
