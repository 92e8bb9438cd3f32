#!/usr/bin/env python3
"""tools/crosscheck.py -- run the ORIGINAL ParallelKernelBench reference of a
problem on the inputs pkb generated, and write its outputs beside pkb's.

    tools/crosscheck.py --orig CHECKOUT --ours DIR --out DIR2 --world W [--time]

DIR is a `pkb run ID --save DIR` folder (rank_R_inputs/outputs.safetensors,
with the problem, world, shape, dtype, trial and params in their metadata).
Each of W processes (one per GPU, NCCL, as the original's own worker starts
them) builds the original's argument tuple with the original's
create_input_tensor(), replaces every tensor in it, in order, by pkb's input
of the same position, and a Python number by pkb's 0-dim input OF THE SAME
NAME (the argument's name in the signature of the original's solution;
040's `lr` is not pkb's `step`), calls the original's solution(*args), and
writes its outputs under pkb's output names into
DIR2/rank_R_outputs.safetensors, which `pkb compare DIR DIR2` then judges
with the problem's own tolerances. A number the original keeps is checked
against pkb's param of that name, and the notes say when they differ.

Where a problem's README names a deliberate deviation from the original's
arguments or results, ADAPTERS below bridges it (in place results, lists
for tensors, a module's weights as inputs, row counts that differ per
rank, data-dependent lengths padded as pkb pads them), from that README
and never inferred from shapes: anything else that does not line up
is said, not guessed. DIR2/rank_R_report.json holds
{"status": "ok" | "layout" | "error", "detail": ..., "notes": [...]}:
"layout" when the original's inputs or outputs do not pair with pkb's (a
count or a shape differs: a bug, or a deviation with no adapter), "error"
when the original raised. With --time also "perf": the original's own
timing of its reference on this rank (utils/performance.py's figures), or
"perf_error" when the timing failed: it has its own try, and the outputs
written before it stand. The original's code comes from the checkout the
user names; nothing of it is copied here.

Only the standard library is needed to import this file (the pure parts are
tested on machines without PyTorch: tests/cli/t0530-crosscheck.sh); torch
is imported by the rank processes.
"""

import argparse
import glob
import importlib.util
import inspect
import json
import os
import signal
import socket
import struct
import sys
import time
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


# 031, 032 and 049-051's expert MLP (one adapter, read only)
_MLP_MODULES = {"modules": ["gate_proj", "up_proj", "down_proj"],
                "why": "the original's expert MLP is three nn.Linear modules; pkb passes "
                       "their weights and biases as inputs, loaded into them by name"}

# The deliberate deviations of pkb's problems from the original's arguments
# and results that crosscheck bridges, by the original's id: each written
# from the problem's README (which says "crosscheck" where it names it),
# never inferred from shapes, so that a real count or length bug still
# shows. Keys:
#   in_place  arguments (top-level names) whose tensors, as the original
#             leaves them after the call, are outputs after its result:
#             pkb's inputs are read-only, so what the original modifies in
#             place pkb returns
#   as_list   arguments the original takes as Python lists of ints, where
#             pkb passes an int64 tensor of the same name
#   sliced    {argument: count}: the original's tensor is as long as pkb's
#             0-dim input `count` says; it gets pkb's first `count` values,
#             and `count` is not one of its arguments
#   sizes     positions in the original's result tuple of a torch.Size,
#             which pkb returns as one int64 tensor
#   summed    {argument: lengths}: the original's tensor is as long as
#             the sum of its argument `lengths`, which pkb's input
#             `lengths` replaces: it gets pkb's first sum(pkb's lengths)
#             values (pkb's is as long as it can be, the rest filler),
#             whatever its own lengths summed to; its other dimensions are
#             checked
#   rows      {argument: rule}: the original's tensor has the same rows on
#             every rank, pkb's rank r has rule(M, W, r) of them (the
#             README's formula); the rest of the shape is the original's
#   params    arguments, Python numbers, that take pkb's param of the
#             same name in place of the original's own: a size the README
#             changes (another param's name is a layout)
#   modules   arguments the original takes as torch.nn.Module: each of its
#             parameters (named_parameters: weight, bias) is loaded with
#             pkb's input `<argument>.<parameter>`, of the same shape
#   padded    {output: fill}: the original returns a result of
#             data-dependent length (rows, its first dimension); pkb's is
#             as long as it can be, the rest filled. The original's is
#             padded the same way: a length that differs still shows as a
#             mismatch, and one longer than pkb's is a layout
#   counts    {output: of}: pkb's 0-dim output `output`, which the original
#             lacks, is the original's row count of its output `of` (before
#             padding)
#   stacked   arguments the original takes as a list of S tensors of one
#             shape, where pkb passes one input of the same name stacked
#             along a new first dimension of S: element k gets pkb's row k
#   stacked_out  pkb's outputs (S, ...) that the original returns as a
#             list of S tensors (...): its next S results, stacked
#   sparse    {argument: (indices, values)}: the original's argument is a
#             sparse COO tensor, pkb passes its indices (D, nnz) and values
#             (nnz,) as two inputs; the tensor is rebuilt from them with the
#             original's size (another D or nnz is a layout)
#   upcast    "float32": pkb's reference computes in fp32 from its
#             lower-precision inputs, where the original runs the same ops
#             in that precision (a deviation its README names); the
#             original is run on the inputs cast to fp32 (exact) and its
#             results rounded once to pkb's dtypes, as pkb's are
ADAPTERS = {
    21: {"in_place": ["grad_tensors"],
         "why": "the original clips grad_tensors in place and returns total_norm; "
                "pkb returns the clipped gradients after it"},
    22: {"in_place": ["non_ep_grad_tensors", "ep_grad_tensors"],
         "why": "the original scales and clips both gradient lists in place and returns "
                "total_norm; pkb returns the gradients after it"},
    27: {"as_list": ["input_split_sizes", "output_split_sizes"],
         "why": "the split sizes are Python lists there, int64 tensors here (random "
                "consistent splits where the original's are even)"},
    28: {"as_list": ["input_splits", "output_splits"], "sizes": [3],
         "why": "the split sizes are Python lists there, int64 tensors here; the "
                "torch.Size result is pkb's org_hidden_states_shape, one int64 tensor"},
    29: {"as_list": ["input_splits", "output_splits"],
         "why": "the split sizes are Python lists there, int64 tensors here (the "
                "routing's own where the original's are synthetic)"},
    31: _MLP_MODULES,
    32: _MLP_MODULES,
    35: {"rows": {"x": lambda m, w, r: max(1, m * (w + 1 + 2 * r) // (2 * w))},
         "why": "the original gives every rank (M, N); pkb's rank r has "
                "max(1, floor(M (W + 1 + 2r) / 2W)) rows, so that the sizes differ"},
    49: _MLP_MODULES,
    50: _MLP_MODULES,
    61: {"padded": {"camera_ids": -1, "gaussian_ids": -1, "radii": 0, "means2d": 0,
                    "depths": 0, "conics": 0, "opacities": 0, "colors": 0},
         "counts": {"count": "camera_ids"}, "upcast": "float32",
         "why": "the original returns the K visible pairs; pkb's outputs have W n rows, "
                "padded with -1 (ids) and 0 after K, and `count` = K; pkb projects in "
                "fp32 where the original's ops run in bf16, so the original runs on the "
                "bf16 inputs cast to fp32"},
    62: {"sparse": {"psi": ("psi_indices", "psi_values")},
         "why": "the original's filter psi is a sparse COO tensor; pkb passes its indices "
                "and values as two inputs, rebuilt into one of the original's size"},
    63: {"stacked": ["H", "weights", "P"], "stacked_out": ["weights", "P"],
         "why": "the original's H, weights and P, and its weights and P results, are "
                "lists of tensors; pkb's are stacked along the first dimension, in order"},
    64: {"padded": {"node": -1, "row": -1, "col": -1, "edge": -1},
         "why": "the original's node, row, col and edge have data-dependent lengths; "
                "pkb pads them with -1 to the largest possible"},
    67: {"padded": {"recv_idx": -1, "recv_value": 0},
         "why": "the original returns the R entries a rank receives; pkb's outputs have "
                "W P rows, the R received first, then ids -1 and rows of 0"},
    68: {"rows": {"local_embedding_shard": lambda m, w, r: -(-max(1 << 22, m) // w)},
         "params": ["num_total_nodes"],
         "why": "the original's table is roundup(max(111e6, M), W) rows, pkb's "
                "roundup(max(2^22, M), W): the original gets pkb's shard and "
                "num_total_nodes, from which it computes the shard size"},
    70: {"summed": {"values": "lengths"}, "padded": {"values": 0},
         "why": "the original's values are sum(lengths) long; pkb's input is as long as "
                "the longest rows and its output padded with zeros"},
    85: {"sliced": {"local_shard": "local_n"}, "padded": {"sorted_slice": float("inf")},
         "why": "the original's shard is as long as the rank's count, pkb's a fixed "
                "length with the count as a 0-dim input; the original's slice is padded "
                "with +inf as pkb's is"},
}

# safetensors dtype -> struct format of one element (BF16: the top half of F32)
ST_PACK = {"F16": "e", "F32": "f", "F64": "d", "I8": "b", "U8": "B", "I32": "i",
           "I64": "q", "BOOL": "?"}


def encode(dt, vals):
    """the bytes of Python numbers `vals` as safetensors dtype dt (BF16 by
    truncation: exact for the fills and counts used here)"""
    if dt == "BF16":
        return b"".join(struct.pack("<f", float(v))[2:] for v in vals)
    if dt not in ST_PACK:
        raise Layout(f"cannot write Python numbers as {dt}")
    f = ST_PACK[dt]
    return b"".join(struct.pack("<" + f, v if f in "efd?" else int(v)) for v in vals)


def decode_ints(dt, data):
    if dt not in ("I8", "U8", "I32", "I64"):
        raise Layout(f"an integer input is {dt}")
    return [x[0] for x in struct.iter_unpack("<" + ST_PACK[dt], data)]


def read_params(meta):
    """pkb's scalar params from the --save metadata ({} from a folder saved
    before they were)"""
    try:
        p = json.loads(meta.get("params") or "{}")
    except ValueError:
        return {}
    return p if isinstance(p, dict) else {}


def pkb_param(params, path):
    """pkb's param for the original's scalar at `path` (name, or name[i] for
    an element of a list argument, which pkb calls name_i or name[i])"""
    for key in (path, path.replace("[", "_").replace("]", "")):
        if key in params:
            return key, params[key]
    return None, None


def adapter_note(pid, adapter, readme):
    return f"crosscheck adapter ({readme or f'problem {pid:03d}'}): {adapter['why']}"


def substitute(args, names, ours, is_tensor, shape_of, take, params=None, adapter=None,
               dims=None, module_params=None, sparse=None):
    """Replace the tensors of the original's argument tuple `args` (nested
    in lists, tuples and dicts too) by pkb's inputs `ours` ([(name, dtype,
    shape, bytes)]) in order; a Python int or float at the top level takes
    pkb's 0-dim input of its name (names: the original's parameter names,
    in order) and is otherwise kept, checked against pkb's `params`; the
    adapter's as_list, sliced, summed, rows, params, modules, stacked and
    sparse arguments as ADAPTERS says. take(entry, leaf) makes pkb's input
    entry into what replaces leaf (a module's parameter: loads it). dims:
    {"m", "world", "rank"} of the run (for rows); module_params(v): [(name,
    parameter)] of a module argument, None for anything else;
    sparse(indices entry, values entry, leaf): the sparse tensor that
    replaces leaf. Returns (new args, notes); raises Layout when a shape, a
    name or the count differs."""
    adapter = adapter or {}
    params = params or {}
    ours = list(ours)
    done = set()
    notes = []
    index = {o[0]: i for i, o in enumerate(ours)}

    def named(name, why):
        if name not in index or index[name] in done:
            raise Layout(f"{why}: pkb has no input '{name}'")
        return index[name]

    def first(j, n, what):   # pkb's input j cut to its first n rows
        name, dt, shape, data = ours[j]
        if len(shape) < 1 or not 0 <= n <= shape[0]:
            raise Layout(f"input '{name}' {shape}: cannot take the first {what} = {n}")
        row = ST_DTYPES[dt][1]
        for d in shape[1:]:
            row *= d
        ours[j] = (name, dt, [n] + shape[1:], data[:n * row])

    for arg, count in adapter.get("sliced", {}).items():
        j, k = named(arg, f"argument '{arg}'"), named(count, f"argument '{arg}'")
        (n,) = decode_ints(ours[k][1], ours[k][3])
        first(j, n, count)
        done.add(k)
    summed = adapter.get("summed", {})
    for arg, lengths in summed.items():
        j, k = named(arg, f"argument '{arg}'"), named(lengths, f"argument '{arg}'")
        n, rows = sum(decode_ints(ours[k][1], ours[k][3])), ours[j][2][:1]
        first(j, n, f"sum({lengths})")
        notes.append(f"input '{arg}': the first sum({lengths}) = {n} of pkb's {rows[0]}")

    def next_pos():
        i = 0
        while i < len(ours) and (i in done or i in claimed):
            i += 1
        return i

    # pkb's inputs that a scalar argument takes by name are not the next
    # tensor's, wherever they stand
    claimed = set()
    for a, n in zip(args, names):
        if n in index and isinstance(a, (int, float)) and not isinstance(a, bool):
            claimed.add(index[n])
    # and a module's parameters are loaded by name, not by position, as are
    # the stacked and sparse arguments' inputs
    mods = adapter.get("modules", [])
    claimed |= {i for i, o in enumerate(ours) for m in mods if o[0].startswith(m + ".")}
    stacked, sparsed = adapter.get("stacked", []), adapter.get("sparse", {})
    claimed |= {index[x] for x in list(stacked) + [y for v in sparsed.values() for y in v]
                if x in index}

    def scalar(v, path):
        key, p = pkb_param(params, path) if path else (None, None)
        if isinstance(v, bool):
            if p is not None and float(v) != float(p):
                notes.append(f"the original's {path}={v!r} kept, differs from pkb's {key}={p!r}")
            return v
        if path in adapter.get("params", []):
            if key is None or (isinstance(v, int) and float(p) != int(p)):
                raise Layout(f"argument '{path}': pkb's param of that name is {p!r}, not "
                             f"a value for the original's {v!r}")
            notes.append(f"the original's scalar {path}={v!r} replaced by pkb's {key}={p!r}")
            return type(v)(p)
        if key is None:
            notes.append(f"the original's scalar {path + '=' if path else ''}{v!r} kept")
        elif float(v) == float(p):
            notes.append(f"the original's scalar {path}={v!r} kept")
        else:
            notes.append(f"the original's scalar {path}={v!r} kept, differs from pkb's {key}={p!r}")
        return v

    def walk(v, path):
        if is_tensor(v):
            i = next_pos()
            if i >= len(ours):
                raise Layout(f"the original has more tensor arguments than pkb's {len(ours)} inputs")
            name, _, shape, _ = ours[i]
            want, rule = list(shape_of(v)), adapter.get("rows", {}).get(path)
            if path in summed and want:   # its own lengths' sum; pkb's lengths replace them
                if name != path:
                    raise Layout(f"the original's '{path}' pairs with pkb's input {i} '{name}'")
                if want[0] != shape[0]:
                    notes.append(f"input '{name}': the original's own lengths summed to {want[0]}")
                want[0] = shape[0]
            if rule and want:
                if not dims:
                    raise Layout(f"argument '{path}': its rows depend on M, W and the rank, "
                                 f"which the saved metadata lacks")
                want[0] = rule(dims["m"], dims["world"], dims["rank"])
                if want != list(shape):
                    raise Layout(f"input {i} '{name}': pkb's shape is {list(shape)}, the rows rule "
                                 f"gives {want} on rank {dims['rank']}")
                notes.append(f"input '{name}': {want[0]} rows on rank {dims['rank']}, the "
                             f"original's {shape_of(v)[0]} on every rank")
            if want != list(shape):
                raise Layout(f"input {i} '{name}': the original's shape is {want}, pkb's {list(shape)}")
            done.add(i)
            return take(ours[i], v)
        if v is None or isinstance(v, (str, bytes)):
            return v
        if isinstance(v, (int, float)):
            return scalar(v, path)
        if isinstance(v, (list, tuple)):
            w = [walk(e, f"{path}[{k}]" if path else None) for k, e in enumerate(v)]
            return type(v)(w) if isinstance(v, list) else tuple(w)
        if isinstance(v, dict):
            return {k: walk(e, None) for k, e in v.items()}
        return v   # process groups, devices, options: the original's own

    new = []
    for k, a in enumerate(args):
        n = names[k] if k < len(names) else None
        if n in mods:
            ps = module_params(a) if module_params else None
            if not ps:
                raise Layout(f"argument '{n}': the original's is not a module with parameters")
            for pn, leaf in ps:
                i = named(f"{n}.{pn}", f"argument '{n}'")
                if list(shape_of(leaf)) != list(ours[i][2]):
                    raise Layout(f"input '{n}.{pn}': the original's parameter has shape "
                                 f"{list(shape_of(leaf))}, pkb's {list(ours[i][2])}")
                done.add(i)
                take(ours[i], leaf)
            new.append(a)
        elif n in stacked:
            i = named(n, f"argument '{n}'")
            name, dt, shape, data = ours[i]
            if not isinstance(a, (list, tuple)) or not shape or len(a) != shape[0]:
                raise Layout(f"argument '{n}': the original's is not a list of "
                             f"{shape[0] if shape else 0} tensors (pkb's '{name}' is {shape})")
            per = len(data) // shape[0]
            got = []
            for k, leaf in enumerate(a):
                if not is_tensor(leaf) or list(shape_of(leaf)) != shape[1:]:
                    what = list(shape_of(leaf)) if is_tensor(leaf) else type(leaf).__name__
                    raise Layout(f"argument '{n}[{k}]': the original's is {what}, a row of "
                                 f"pkb's '{name}' {shape[1:]}")
                got.append(take((f"{name}[{k}]", dt, shape[1:], data[k * per:(k + 1) * per]), leaf))
            done.add(i)
            new.append(type(a)(got))
        elif n in sparsed:
            ii, vi = (named(x, f"argument '{n}'") for x in sparsed[n])
            ishape, vshape, want = ours[ii][2], ours[vi][2], list(shape_of(a)) if is_tensor(a) else None
            if want is None or len(ishape) != 2 or ishape[0] != len(want) or vshape != ishape[1:]:
                raise Layout(f"argument '{n}': the original's {want} does not take pkb's "
                             f"'{ours[ii][0]}' {ishape} and '{ours[vi][0]}' {vshape} as a sparse tensor")
            if sparse is None:
                raise Layout(f"argument '{n}': no sparse tensors here")
            done |= {ii, vi}
            new.append(sparse(ours[ii], ours[vi], a))
            notes.append(f"input '{n}': a sparse {want} tensor of pkb's '{ours[ii][0]}' and "
                         f"'{ours[vi][0]}' ({ishape[1]} entries)")
        elif n in adapter.get("as_list", []):
            i = named(n, f"argument '{n}'")
            vals = decode_ints(ours[i][1], ours[i][3])
            if not isinstance(a, (list, tuple)) or len(vals) != len(a):
                raise Layout(f"argument '{n}': the original's is not a list of {len(vals)} numbers")
            done.add(i)
            new.append(type(a)(vals))
        elif n in index and index[n] in claimed and isinstance(a, (int, float)) and not isinstance(a, bool):
            i = index[n]
            if ours[i][2] != []:
                raise Layout(f"argument '{n}' is a number, pkb's input '{n}' has shape {ours[i][2]}")
            done.add(i)
            new.append(take(ours[i], a))
        else:
            new.append(walk(a, n))
    left = [o[0] for i, o in enumerate(ours) if i not in done]
    if left:
        raise Layout(f"pkb has inputs the original's arguments lack: {', '.join(left)}")
    return tuple(new), notes


class Ints(list):
    """a torch.Size of the original's result, which pkb returns as a tensor"""


class Stack(list):
    """the original's results that one of pkb's outputs stacks (stacked_out)"""


class Count:
    """pkb's count of the rows of the original's output `of` (counts)"""

    def __init__(self, of):
        self.of = of


def flatten(y, is_tensor):
    """the original's result as a list of leaves in order: tensors, Ints
    and Python numbers (a loss returned as a float); None is skipped"""
    if is_tensor(y) or isinstance(y, Ints) or (isinstance(y, (int, float)) and not isinstance(y, bool)):
        return [y]
    if isinstance(y, (list, tuple)):
        return [x for e in y for x in flatten(e, is_tensor)]
    if isinstance(y, dict):
        return [x for e in y.values() for x in flatten(e, is_tensor)]
    return []


def gather(y, args, names, ours_out, is_tensor, to_bytes, adapter=None):
    """The original's results, written as pkb's outputs `ours_out` ([(name,
    dtype, shape, bytes)]): [(name, dtype, shape, bytes)] and notes. y is
    what solution(*args) returned; to_bytes(leaf, dtype) gives (shape,
    bytes, notes) of a tensor or number cast to pkb's dtype. Raises Layout
    when the count or a shape differs (beyond what the adapter pads)."""
    adapter = adapter or {}
    notes = []
    if adapter.get("sizes") and isinstance(y, tuple):
        y = tuple(Ints(e) if k in adapter["sizes"] else e for k, e in enumerate(y))
    got = flatten(y, is_tensor)
    for n in adapter.get("in_place", []):
        if n not in names:
            raise Layout(f"the original has no argument '{n}'")
        got += flatten(args[names.index(n)], is_tensor)
    # pkb's counts, where pkb has them, among the original's results
    out_names, counts = [o[0] for o in ours_out], adapter.get("counts", {})
    for o in [x for c in counts.items() for x in c] + adapter.get("stacked_out", []):
        if o not in out_names:
            raise Layout(f"pkb's problem has no output '{o}'")
    # pkb's stacked outputs take as many of the original's results as
    # their first dimension says
    if adapter.get("stacked_out"):
        mine = [o for o in ours_out if o[0] not in counts]
        want = [o[2][0] if o[0] in adapter["stacked_out"] and o[2] else 1 for o in mine]
        if len(got) != sum(want):
            raise Layout(f"the original returns {len(got)} tensors, pkb's problem's outputs "
                         f"take {sum(want)} (" + ", ".join(f"{o[0]}: {k}" for o, k in zip(mine, want)) + ")")
        it = iter(got)
        got = [Stack(next(it) for _ in range(k)) if o[0] in adapter["stacked_out"] else next(it)
               for o, k in zip(mine, want)]
    for c in sorted(counts, key=out_names.index):
        got.insert(out_names.index(c), Count(counts[c]))
    if len(got) != len(ours_out):
        besides = f" besides {', '.join(counts)}" if counts else ""
        raise Layout(f"the original returns {len(got) - len(counts)} tensors, pkb's problem "
                     f"{len(ours_out) - len(counts)}{besides}")
    written, rows = [], {}
    for (name, dt, shape, _), g in zip(ours_out, got):
        if isinstance(g, Count):
            if g.of not in rows:
                raise Layout(f"output '{name}' counts the rows of '{g.of}', which comes after it")
            gshape, b = [], encode(dt, [rows[g.of]])
        elif isinstance(g, Ints):
            gshape, b = [len(g)], encode(dt, g)
        elif isinstance(g, Stack):
            parts = []
            for k, leaf in enumerate(g):
                lshape, lb, more = to_bytes(leaf, dt)
                notes += more
                if list(lshape) != list(shape[1:]):
                    raise Layout(f"output '{name}[{k}]': the original's shape is {list(lshape)}, "
                                 f"a row of pkb's {list(shape)}")
                parts.append(lb)
            gshape, b = [len(g)] + list(shape[1:]), b"".join(parts)
            notes.append(f"output '{name}': the original's {len(g)} tensors {list(shape[1:])} stacked")
        else:
            gshape, b, more = to_bytes(g, dt)
            notes += more
        gshape = list(gshape)
        rows[name] = gshape[0] if gshape else None
        fill = adapter.get("padded", {}).get(name)
        if (fill is not None and len(gshape) == len(shape) >= 1 and gshape[1:] == list(shape[1:])
                and gshape[0] <= shape[0]):
            row = 1
            for s in shape[1:]:
                row *= s
            if gshape[0] < shape[0]:
                notes.append(f"output '{name}': the original's {gshape[0]} "
                             f"{'elements' if len(shape) == 1 else 'rows'} padded with {fill!r} "
                             f"to pkb's {shape[0]}")
            b += encode(dt, [fill]) * ((shape[0] - gshape[0]) * row)
            gshape = list(shape)
        n = 1
        for s in shape:
            n *= s
        if gshape != list(shape):
            m = 1
            for s in gshape:
                m *= s
            if m != n:
                raise Layout(f"output '{name}': the original's shape is {gshape}, pkb's {list(shape)}")
            notes.append(f"output '{name}' reshaped from {gshape} to {list(shape)}")
        written.append((name, dt, list(shape), b))
    return written, notes


def original_solution(orig, pid):
    paths = sorted(glob.glob(os.path.join(orig, "reference", f"{pid}_*.py")))
    if len(paths) != 1:
        raise FileNotFoundError(f"{orig}/reference/{pid}_*.py: {len(paths)} files match, want 1")
    spec = importlib.util.spec_from_file_location(f"pkb_original_{pid}", paths[0])
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.solution, paths[0]


def readme_of(pid):
    """problems/NNN_name/README.md of pkb's problem pid, relative to the
    repository (None when there is none)"""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    paths = glob.glob(os.path.join(root, "problems", f"{pid:03d}_*", "README.md"))
    return os.path.relpath(paths[0], root) if len(paths) == 1 else None


def die_with_parent():
    """this process is killed when its parent ends (prctl PR_SET_PDEATHSIG):
    a rank outlives neither crosscheck.py nor a --within runner killed at
    its deadline"""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass


# the note every rank of a -g run writes: the control, not the comparison
CONTROL_NOTE = "crosscheck: the original's GEMMs with torch's default reductions (-g: the control)"


def gemm_reductions(record):
    """how the original's bf16/fp16 GEMMs reduced in a tools/crosscheck
    record: "torch_default" under -g (the control, not the comparison) or
    "fp32"; one from before the record's field says -g by its note"""
    if "gemm_reductions" in record:
        return record["gemm_reductions"]
    return "torch_default" if CONTROL_NOTE in record.get("notes", []) else "fp32"


def full_precision_gemms(torch, notes):
    """bf16 and fp16 GEMMs reduce in fp32, as pkb's references do
    (include/pkb_ref.cuh: CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)
    and its tolerances assume. torch lets cuBLAS keep split-K partial sums
    in the output type by default (allow_bf16/fp16_reduced_precision_
    reduction, both True; recent torch has cuBLASLt honour them too, as
    cuBLAS does). A skinny GEMM such as 031's router (K = N = 1024, 8
    columns, 8192 outputs for 132 SMs) is one cuBLAS splits over K: with
    bf16 partial sums its logits can miss the exact sum that pkb's
    sixteenths guarantee by an ulp or more, which flips a near-tied top-2
    choice (031, 032). Split-K itself is a second setting (torch >= 2.10:
    the flag takes (allow_reduced_precision, allow_splitk)): with it on,
    cuBLASLt's split-K epilogue adds F.linear's bias to the product already
    rounded to bf16, T(T(xW) + b), where pkb and the formula round once;
    049's and 050's 2- and 4-column routers at W = 2 (K = 1024) are split
    so, which moved routing weights (36 and 527 elements wrong on 4x H200,
    2026-11-28; reproduced exactly on the host from pkb's inputs, the
    problems' READMEs). Both are turned off; an older torch takes only the
    bool, and the note says split-K stayed. -g (--torch-gemms) leaves
    torch's defaults: the control. Returns what puts them back (the
    original's timing runs with its own settings)."""
    try:
        m = torch.backends.cuda.matmul
        old = (m.allow_bf16_reduced_precision_reduction, m.allow_fp16_reduced_precision_reduction)
    except AttributeError:
        return lambda: None
    try:
        m.allow_bf16_reduced_precision_reduction = (False, False)
        m.allow_fp16_reduced_precision_reduction = (False, False)
        splitk = "off"
    except (TypeError, ValueError, RuntimeError):
        m.allow_bf16_reduced_precision_reduction = False
        m.allow_fp16_reduced_precision_reduction = False
        splitk = "on (this torch takes no allow_splitk)"
    notes.append("crosscheck: the original's bf16/fp16 GEMMs reduce in fp32, as pkb's do "
                 "(torch's allow_*_reduced_precision_reduction off, split-K %s; on again for "
                 "its timing)" % splitk)

    def restore():
        m.allow_bf16_reduced_precision_reduction, m.allow_fp16_reduced_precision_reduction = old
    return restore


def write_report(path, report):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(report, f, indent=1)
    os.replace(tmp, path)


def rank_main(rank, world, opts):
    """one rank: the original's init, inputs (pkb's substituted), solution,
    outputs; then, with --time, the original's timing in a try of its own.
    Its report is written whatever happens: before the timing (the
    comparison's, with a perf_error that says it did not finish, should the
    parent end this rank in it), and again after."""
    report = {"status": "error", "detail": "", "notes": []}
    out_path = os.path.join(opts.out, f"rank_{rank}_outputs.safetensors")
    report_path = os.path.join(opts.out, f"rank_{rank}_report.json")
    try:
        die_with_parent()
        import torch
        import torch.distributed as dist

        restore_gemms = lambda: None
        if opts.torch_gemms:
            report["notes"].append(CONTROL_NOTE)
        else:
            restore_gemms = full_precision_gemms(torch, report["notes"])
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
        try:
            names = list(inspect.signature(solution).parameters)
        except (TypeError, ValueError):
            names = []
        adapter = ADAPTERS.get(pid)
        if adapter:
            report["notes"].append(adapter_note(pid, adapter, readme_of(pid)))

        upcast = getattr(torch, adapter["upcast"]) if adapter and adapter.get("upcast") else None

        def load(entry):
            name, dt, shape, data = entry
            t = torch.frombuffer(bytearray(data), dtype=getattr(torch, ST_DTYPES[dt][0]))
            return t.reshape(shape).to(dev)

        def take(entry, leaf):
            name = entry[0]
            t = load(entry)
            if isinstance(leaf, torch.Tensor):
                want = leaf.dtype
                if upcast is not None and leaf.is_floating_point() and not isinstance(leaf, torch.nn.Parameter):
                    want = upcast
                if want != t.dtype:
                    whose = "the adapter's" if want is not leaf.dtype else "the original's"
                    report["notes"].append(f"input '{name}' cast from {t.dtype} to {whose} {want}")
                    t = t.to(want)
                if isinstance(leaf, torch.nn.Parameter):   # a module's (modules): loaded
                    with torch.no_grad():
                        leaf.copy_(t)
                    return leaf
                return t.contiguous() if leaf.is_contiguous() else t
            return type(leaf)(t.item())

        def to_bytes(leaf, dt):
            g = torch.as_tensor(leaf, device=dev)
            want = getattr(torch, ST_DTYPES[dt][0])
            notes = []
            if g.dtype != want:
                notes.append(f"output cast from {g.dtype} to pkb's {want}")
                g = g.to(want)
            return list(g.shape), g.detach().contiguous().cpu().view(-1).view(torch.uint8).numpy().tobytes(), notes

        def sparse(ie, ve, leaf):   # the original's sparse COO tensor, of pkb's two inputs
            if leaf.layout != torch.sparse_coo or leaf._nnz() != ie[2][1]:
                raise Layout(f"input '{ie[0]}': the original's is {leaf.layout} with "
                             f"{leaf._nnz() if leaf.layout == torch.sparse_coo else '?'} entries, "
                             f"pkb's {ie[2][1]}")
            v = take(ve, leaf.values())
            return torch.sparse_coo_tensor(load(ie), v, size=leaf.shape, device=dev).coalesce()

        dims = {"m": int(meta["m"]), "world": world, "rank": rank}
        args, notes = substitute(args, names, ours, lambda v: isinstance(v, torch.Tensor),
                                 lambda v: v.shape, take, read_params(meta), adapter, dims,
                                 lambda v: list(v.named_parameters())
                                 if isinstance(v, torch.nn.Module) else None, sparse)
        report["notes"] += notes
        t0 = time.monotonic()
        y = solution(*args)
        torch.cuda.synchronize()
        first_call = time.monotonic() - t0
        written, notes = gather(y, args, names, ours_out, lambda v: isinstance(v, torch.Tensor),
                                to_bytes, adapter)
        report["notes"] += notes
        write_st(out_path, written, meta)
        report["status"] = "ok"
    except Layout as e:
        report["status"], report["detail"] = "layout", str(e)
    except Exception as e:
        report["status"] = "error"
        report["detail"] = f"{type(e).__name__}: {e}".splitlines()[0][:400]
        report["traceback"] = traceback.format_exc()[-4000:]
    ok = report["status"] == "ok"
    if ok and opts.time:
        # the original's timing loop may fail where its one call did not
        # (048 makes communicators on every call and never frees them): the
        # comparison stands, perf_error says why there is no time
        report["perf_error"] = ("did not finish timing (ended: another rank's timing "
                                "failed, or the time limit)")
        write_report(report_path, report)
        try:
            restore_gemms()
            report["perf"] = time_original(opts.orig, solution, args, opts.warmup, opts.iters,
                                           first_call, opts.deadline, report["notes"])
            del report["perf_error"]
        except Exception as e:
            report["perf_error"] = f"{type(e).__name__}: {e}".splitlines()[0][:400]
            report["perf_traceback"] = traceback.format_exc()[-4000:]
    if ok and "perf_error" not in report:
        try:
            dist.barrier()
            finalize_reference()
        except Exception as e:
            report["notes"].append(f"teardown: {type(e).__name__}: {e}".splitlines()[0][:200])
    write_report(report_path, report)
    # a rank that failed must not leave the others waiting in a collective:
    # the parent sees it exit non-zero and ends the group (2: the timing
    # failed, after the outputs: the others first finish theirs)
    os._exit(0 if ok and "perf_error" not in report else 2 if ok else 1)


def cached_new_group(dist):
    """dist.new_group that returns the group it made before for the same
    ranks and options: the original's 048 makes four communicators per call
    and never frees them, which its own --measure_perf leaks the same way
    (NCCL runs out of memory within the 600 calls). Every rank calls it in
    the same order, so every rank keeps the same groups."""
    real, made = dist.new_group, {}

    def new_group(ranks=None, *rest, **kw):
        key = (tuple(ranks) if ranks is not None else None, repr(rest), repr(sorted(kw.items())))
        if key not in made:
            made[key] = real(ranks, *rest, **kw)
        return made[key]
    return real, new_group


def agreed(per_call, budget):
    """(the largest per_call, the smallest budget) of every rank: one
    all-reduce on the default group, which every rank calls at the same
    point, so that every rank sizes its timing from the same figures"""
    import torch
    import torch.distributed as dist
    t = torch.tensor([float(per_call), -float(budget)], dtype=torch.float64,
                     device=torch.device("cuda", torch.cuda.current_device()))
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    v = t.tolist()
    return v[0], -v[1]


def timing_counts(warmup, iters, per_call, budget):
    """(warmup, iters) that fit `budget` seconds at `per_call` seconds a
    call, in the original's 5 : 1 proportion (500 : 100), at least 1 and 5;
    the original's own counts when they fit"""
    if budget is None or per_call <= 0 or (warmup + iters) * per_call <= budget:
        return warmup, iters
    calls = int(budget / per_call)
    it = max(5, min(iters, calls // 6))
    return max(1, min(warmup, calls - it)), it


def time_original(orig, solution, args, warmup, iters, first_call=0.0, deadline=0.0, notes=None):
    """the original's own timing of its reference, as its worker runs it
    with --measure_perf: scripts/worker.py picks the tensor to rotate
    through L2-sized input groups, utils/performance.py times it (per-call
    CUDA events after `warmup` calls). The original's summary takes the
    slowest rank's wall_time_ms (a mean over the calls). dist.new_group is
    cached while it runs (cached_new_group).
    Fewer calls when the original's 500 + 100 would outlast the case's
    deadline (an epoch time; 0: none): 064's original takes most of a
    second a call (a Python loop with .item()s per frontier node), its 600
    calls five to ten minutes. The slowest rank's first call (first_call seconds) decides
    whether a second, warm one is timed to size the counts; every rank
    takes the same counts (an all-reduce), or the collectives would not
    pair up. The notes say so."""
    import torch
    import torch.distributed as dist
    spec = importlib.util.spec_from_file_location("pkb_original_worker",
                                                  os.path.join(orig, "scripts", "worker.py"))
    worker = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(worker)
    from utils.performance import measure_solution_performance
    tensor, run_fn = worker._perf_run_fn_and_first_tensor(solution, args)
    if deadline:
        per_call, budget = agreed(first_call, max(0.0, deadline - time.time()))
        if (warmup + iters) * per_call > budget:
            t0 = time.monotonic()
            run_fn(tensor)
            torch.cuda.synchronize()
            per_call, budget = agreed(time.monotonic() - t0, max(0.0, deadline - time.time()))
        w, i = timing_counts(warmup, iters, per_call, budget)
        if (w, i) != (warmup, iters) and notes is not None:
            notes.append(f"the original timed over {w} + {i} calls, not {warmup} + {iters}: "
                         f"one takes {per_call:.2g} s, {budget:.0f} s were left for them")
        warmup, iters = w, i
    real, dist.new_group = cached_new_group(dist)
    try:
        m = measure_solution_performance(run_fn, tensor, warmup_iters=warmup, measure_iters=iters)
    finally:
        dist.new_group = real
    return {k: m[k] for k in ("wall_time_ms", "wall_time_std_ms", "min_time_ms", "max_time_ms",
                              "iterations", "warmup_iterations", "num_input_groups")}


def children_of_me():
    """the pids whose parent is this process (any of its threads)"""
    pids = []
    for task in os.listdir(f"/proc/{os.getpid()}/task"):
        try:
            with open(f"/proc/{os.getpid()}/task/{task}/children") as f:
                pids += [int(x) for x in f.read().split()]
        except OSError:
            pass
    return pids


def end_descendants():
    """Kill what is left below this process, a subreaper: the command's
    process group, then whatever was orphaned onto it (pkb's ranks live in
    process groups of their own), their groups too, until none is left"""
    for _ in range(100):
        kids = children_of_me()
        if not kids:
            return
        for pid in kids:
            for k in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, signal.SIGKILL)):
                try:
                    k()
                except OSError:
                    pass
        time.sleep(0.05)
        try:
            while os.waitpid(-1, os.WNOHANG)[0] > 0:
                pass
        except ChildProcessError:
            pass


def within(limit, argv, grace=3.0):
    """`crosscheck.py --within SECONDS -- COMMAND...`: COMMAND in a session
    of its own, killed with everything it started when SECONDS pass (TERM
    to its process group, KILL after `grace` seconds, then every process
    orphaned onto this one, a subreaper). Exit status: COMMAND's (128 +
    the signal that killed it), or 124 when the time ran out, as
    timeout(1) says. A TERM or INT to this process ends COMMAND at once
    the same way, then this. Nothing is left behind when COMMAND ends by
    itself either."""
    import ctypes
    import subprocess
    try:   # PR_SET_CHILD_SUBREAPER: the ranks a killed command orphans come here
        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    p = subprocess.Popen(argv, start_new_session=True, preexec_fn=die_with_parent)

    def stop(p, sig):
        try:
            os.killpg(p.pid, sig)
        except OSError:
            pass

    def on_signal(signum, frame):
        stop(p, signal.SIGKILL)
        end_descendants()
        os._exit(128 + signum)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        rc = p.wait(timeout=max(0.0, limit))
    except subprocess.TimeoutExpired:
        stop(p, signal.SIGTERM)
        try:
            p.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            stop(p, signal.SIGKILL)
            p.wait()
        rc = 124
    end_descendants()
    return rc if rc >= 0 else 128 - rc


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    if sys.argv[1:2] == ["--within"]:
        try:
            limit, sep, argv = float(sys.argv[2]), sys.argv[3], sys.argv[4:]
        except (IndexError, ValueError):
            sep, argv = None, []
        if sep != "--" or not argv:
            sys.exit("usage: crosscheck.py --within SECONDS -- COMMAND [ARG...]")
        sys.exit(within(limit, argv))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--orig", required=True, help="a checkout of the original repository")
    ap.add_argument("--ours", required=True, help="a `pkb run --save` folder")
    ap.add_argument("--out", required=True, help="where the original's outputs go")
    ap.add_argument("--world", type=int, required=True)
    ap.add_argument("--time", action="store_true",
                    help="also time the original's reference as its own worker does")
    ap.add_argument("--warmup", type=int, default=500)
    ap.add_argument("--iters", type=int, default=100)
    ap.add_argument("--torch-gemms", action="store_true",
                    help="leave torch's default GEMM reductions (the control for the fp32 ones)")
    ap.add_argument("--deadline", type=float, default=0.0,
                    help="the epoch time by which the timing must be done (fewer calls then)")
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

    def end(signum, frame):   # tools/crosscheck's time limit: no rank outlives it
        for p in procs:
            if p.pid is not None and p.exitcode is None:
                p.kill()
        sys.exit(128 + signum)
    signal.signal(signal.SIGTERM, end)
    for p in procs:
        p.start()
    # The first rank to fail ends the rest: they may wait forever in NCCL.
    # One whose timing failed (exit 2) has written its outputs; the others
    # are ended once they have too (their report is written before their
    # timing), or after a grace of 120 s
    alive, grace = list(procs), None
    while alive:
        for p in list(alive):
            p.join(0.2)
            if p.exitcode is None:
                r = procs.index(p)
                if grace is not None and (time.monotonic() > grace or os.path.exists(
                        os.path.join(opts.out, f"rank_{r}_report.json"))):
                    p.kill()
                continue
            alive.remove(p)
            if p.exitcode == 2 and grace is None:
                grace = time.monotonic() + 120
            elif p.exitcode not in (0, 2):
                for q in alive:
                    q.kill()
    sys.exit(0)


if __name__ == "__main__":
    main()
