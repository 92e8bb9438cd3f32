# tools/crosscheck's parts that need no GPU and no PyTorch: the safetensors
# files tools/crosscheck.py writes are read by pkb compare (and judged with
# the problem's tolerances from their metadata), the pairing of the
# original's arguments and results with pkb's inputs and outputs, and the
# refusals of bad usage. The run itself (the original on GPUs) is measured
# on a multi-GPU machine: bench/results/*_crosscheck.jsonl.
. "$(dirname "$0")/lib.sh"
export PYTHONPATH=$ROOT/tools

# files written by crosscheck.py: pkb reads them; equal outputs agree, one
# element off by far more than 001's tolerance is a mismatch at its index
expect_exit 0 python3 - "$TMP" <<'EOF'
import os, struct, sys
from crosscheck import read_st, write_st
d = sys.argv[1]
def bf16(vals):
    return b"".join(struct.pack("<f", v)[2:] for v in vals)
for sub, bad in (("a", None), ("b", None), ("c", 5)):
    os.makedirs(os.path.join(d, sub), exist_ok=True)
    for r in range(2):
        vals = [0.25 * i for i in range(6)]
        if bad is not None and r == 1:
            vals[bad] = 100.0
        meta = {"pkb_problem": "1", "world": "2", "rank": str(r), "m": "2", "n": "3",
                "dtype": "bf16", "trial": "0", "order": "out"}
        write_st(os.path.join(d, sub, f"rank_{r}_outputs.safetensors"),
                 [("out", "BF16", [2, 3], bf16(vals))], meta)
meta, t = read_st(os.path.join(d, "a", "rank_1_outputs.safetensors"))
assert meta["rank"] == "1" and t[0][:3] == ("out", "BF16", [2, 3]), (meta, t)
assert t[0][3] == bf16([0.25 * i for i in range(6)])
# the metadata's order wins over the offsets' (JSON objects have none)
write_st(os.path.join(d, "o.safetensors"),
         [("b", "F32", [1], b"\0" * 4), ("a", "I64", [], b"\0" * 8)], {"order": "a,b"})
assert [x[0] for x in read_st(os.path.join(d, "o.safetensors"))[1]] == ["a", "b"]
EOF
expect_exit 0 "$PKB" compare "$TMP/a" "$TMP/b"
expect_exit 3 "$PKB" compare "$TMP/a" "$TMP/c"
expect_grep "^rank 1 out +MISMATCH: 1 of 6 wrong; worst at 5: 1.25 vs 100" "$TMP/out"
expect_exit 0 "$PKB" compare --inspect "$TMP/b"
expect_grep "out +bf16 +\(2, 3\)" "$TMP/out"

# pairing: tensors in order (nested too), a Python number takes pkb's 0-dim
# input of its name (the original's parameter names), strings and groups
# stay the original's; a kept number is checked against pkb's param of its
# name (name_i for a list's element i); every mismatch is named
expect_exit 0 python3 - <<'EOF'
import struct
from crosscheck import substitute, flatten, Layout
class T:   # a stand-in for torch.Tensor
    def __init__(self, shape, tag=""): self.shape, self.tag = tuple(shape), tag
is_t = lambda v: isinstance(v, T)
ours = [("x", "BF16", [4, 8], b""), ("steps", "I64", [], b""), ("w", "F32", [8], b""),
        ("v", "F32", [2], b"")]
take = lambda o, leaf: ("pkb", o[0], leaf if not is_t(leaf) else leaf.shape)
names = ["x", "steps", "mode", "ws", "alpha", "group", "flag"]
args = (T([4, 8]), 7, "pinhole", [T([8]), {"k": T([2])}], 0.3, None, True)
new, notes = substitute(args, names, ours, is_t, lambda v: v.shape, take)
assert new[0] == ("pkb", "x", (4, 8)), new
assert new[1] == ("pkb", "steps", 7), new
assert new[2] == "pinhole" and new[5] is None and new[6] is True, new
assert isinstance(new[3], list) and new[3][0][1] == "w" and new[3][1]["k"][1] == "v", new
assert new[4] == 0.3 and notes == ["the original's scalar alpha=0.3 kept"], (new, notes)
# 040's shape (issue 37): lr comes before the tensor-less step; by position
# lr took pkb's step. By name step takes it, lr, beta1 stay and are checked
ours40 = [("W1", "BF16", [2], b""), ("step", "I64", [], b"")]
new, notes = substitute((T([2]), 1e-3, 0.9, 1), ["W1", "lr", "beta1", "step"], ours40, is_t,
                        lambda v: v.shape, take, {"lr": 0.001, "beta1": 0.8})
assert new == (("pkb", "W1", (2,)), 1e-3, 0.9, ("pkb", "step", 1)), new
assert notes == ["the original's scalar lr=0.001 kept",
                 "the original's scalar beta1=0.9 kept, differs from pkb's beta1=0.8"], notes
# 047's: a tuple of shapes among the tensors; 064's: a list pkb has as params
new, notes = substitute((T([2]), ((3, 4),), T([2]), 1), ["a", "param_shapes", "b", "step"],
                        [("a", "F32", [2], b""), ("b", "F32", [2], b""), ("step", "I64", [], b"")],
                        is_t, lambda v: v.shape, take, {})
assert new[1] == ((3, 4),) and new[2] == ("pkb", "b", (2,)) and new[3][1] == "step", new
assert notes == ["the original's scalar param_shapes[0][0]=3 kept",
                 "the original's scalar param_shapes[0][1]=4 kept"], notes
new, notes = substitute((T([2]), [10, 5]), ["seed_nodes", "fanouts"], [("seed_nodes", "I64", [2], b"")],
                        is_t, lambda v: v.shape, take, {"fanouts_0": 10, "fanouts_1": 4})
assert notes == ["the original's scalar fanouts[0]=10 kept",
                 "the original's scalar fanouts[1]=5 kept, differs from pkb's fanouts_1=4"], notes
def refused(a, o, want, names=("x", "y")):
    try:
        substitute(a, list(names), o, is_t, lambda v: v.shape, take)
    except Layout as e:
        assert want in str(e), (str(e), want)
        return
    raise AssertionError(f"no Layout for {want}")
refused((T([4, 9]),), ours[:1], "input 0 'x': the original's shape is [4, 9], pkb's [4, 8]")
refused((T([4, 8]),), ours[:3], "pkb has inputs the original's arguments lack: steps, w")
refused((T([4, 8]), T([1])), ours[:1], "more tensor arguments than pkb's 1 inputs")
# a number of another name no longer takes a 0-dim input by its position
refused((T([4, 8]), 0.5), ours[:2], "pkb has inputs the original's arguments lack: steps", ("x", "lr"))
refused((T([4, 8]), 2), ours[:1] + [("y", "I64", [3], b"")], "argument 'y' is a number, pkb's input 'y' has shape [3]")
assert [x.tag for x in flatten((T([1], "a"), None, [T([2], "b"), {"c": T([3], "c")}]), is_t)] == ["a", "b", "c"]
assert flatten(2.5, is_t) == [2.5] and flatten(None, is_t) == []
EOF

# adapters (ADAPTERS, each from its problem's README): 021's clipped
# gradients are its inputs after the call; 028's splits are lists there and
# its torch.Size one tensor here; 064's and 085's data-dependent lengths are
# padded as pkb pads them, but a longer result or another count is a layout,
# never cut or padded away; 085's shard is pkb's first local_n values.
# Issue 37's: 027's and 029's splits as 028's; 031's, 032's and 049's
# nn.Linear modules loaded from pkb's inputs by name; 035's rows per rank by
# its README's rule; 061's results padded by rows with count = K; 070's
# values the first sum(lengths). 2026-11-28's: 067's results padded as
# 064's; 068's shard rows by its README's rule and num_total_nodes pkb's
# param. Each is checked against the layout it reported without the adapter
ROOT=$ROOT expect_exit 0 python3 - <<'EOF'
import struct
from crosscheck import ADAPTERS, substitute, gather, encode, Layout
class T:
    def __init__(self, shape, data=b""): self.shape, self.data = tuple(shape), data
is_t = lambda v: isinstance(v, T)
take = lambda o, leaf: T(o[2], o[3])
to_bytes = lambda g, dt: (list(g.shape), g.data, [])
def refused(f, want):
    try:
        f()
    except Layout as e:
        assert want in str(e), (str(e), want)
        return
    raise AssertionError(f"no Layout for {want}")
i64 = lambda *v: struct.pack(f"<{len(v)}q", *v)
# 021: the list of gradients (clipped in place) follows total_norm
a21 = ADAPTERS[21]
names = ["grad_tensors", "max_norm", "norm_type", "fsdp_group"]
ours_out = [("total_norm", "F32", [], b""), ("clipped_grads[0]", "BF16", [2], b""),
            ("clipped_grads[1]", "BF16", [2], b"")]
args = ([T([2], b"g0g0"), T([2], b"g1g1")], 1.0, 2.0, None)
w, notes = gather(T([], b"nrm!"), args, names, ours_out, is_t, to_bytes, a21)
assert [(x[0], x[3]) for x in w] == [("total_norm", b"nrm!"), ("clipped_grads[0]", b"g0g0"),
                                     ("clipped_grads[1]", b"g1g1")], w
refused(lambda: gather(T([], b"nrm!"), args, names, ours_out, is_t, to_bytes), "returns 1 tensors, pkb's problem 3")
assert ADAPTERS[22]["in_place"] == ["non_ep_grad_tensors", "ep_grad_tensors"]
# 028: lists from pkb's int64 tensors; the Size as int64
a28 = ADAPTERS[28]
names = ["hidden_states", "expert_mask", "num_experts", "input_splits", "output_splits",
         "num_global_tokens_per_local_expert", "group"]
ours = [("hidden_states", "BF16", [4, 2], b""), ("expert_mask", "F32", [8, 2, 4], b""),
        ("input_splits", "I64", [2], i64(3, 5)), ("output_splits", "I64", [2], i64(6, 2)),
        ("num_global_tokens_per_local_expert", "I64", [2, 4], b"")]
args = (T([4, 2]), T([8, 2, 4]), 8, [4, 4], [4, 4], T([2, 4]), None)
new, notes = substitute(args, names, ours, is_t, lambda v: v.shape, take, {"num_experts": 8}, a28)
assert new[3] == [3, 5] and new[4] == [6, 2] and new[5].shape == (2, 4), new
assert notes == ["the original's scalar num_experts=8 kept"], notes
refused(lambda: substitute(args, names, ours, is_t, lambda v: v.shape, take), "input 2 'input_splits'")
ours_out = [("g", "BF16", [2], b""), ("routing_map", "F32", [1], b""), ("perm", "I64", [1], b""),
            ("org_hidden_states_shape", "I64", [2], b"")]
y = (T([2], b"gggg"), T([1], b"rrrr"), T([1], b"p" * 8), (4, 2))
w, _ = gather(y, new, names, ours_out, is_t, to_bytes, a28)
assert w[3] == ("org_hidden_states_shape", "I64", [2], i64(4, 2)), w
# 064: -1 after the original's U; a longer one is refused
a64 = ADAPTERS[64]
ours_out = [(n, "I64", [4], b"") for n in ("node", "row", "col", "edge")]
y = (T([2], i64(7, 9)), T([1], i64(0)), T([1], i64(1)), T([4], i64(5, 6, 7, 8)))
w, notes = gather(y, (), [], ours_out, is_t, to_bytes, a64)
assert w[0][3] == i64(7, 9, -1, -1) and w[1][3] == i64(0, -1, -1, -1) and w[3][3] == i64(5, 6, 7, 8), w
assert "output 'node': the original's 2 elements padded with -1 to pkb's 4" in notes, notes
y = (T([5], i64(1, 2, 3, 4, 5)),) + y[1:]
refused(lambda: gather(y, (), [], ours_out, is_t, to_bytes, a64), "output 'node': the original's shape is [5], pkb's [4]")
# 085: the first local_n values in; +inf after the original's slice
a85 = ADAPTERS[85]
bf = lambda *v: encode("BF16", v)
ours = [("local_shard", "BF16", [4], bf(3, 1, 2, 9)), ("local_n", "I64", [], i64(3))]
new, _ = substitute((T([3]), None), ["local_shard", "group"], ours, is_t, lambda v: v.shape, take, {}, a85)
assert new[0].shape == (3,) and new[0].data == bf(3, 1, 2), new
refused(lambda: substitute((T([4]), None), ["local_shard", "group"], ours, is_t, lambda v: v.shape, take, {}, a85),
        "input 0 'local_shard': the original's shape is [4], pkb's [3]")
w, _ = gather(T([3], bf(1, 2, 3)), new, ["local_shard", "group"], [("sorted_slice", "BF16", [4], b"")],
              is_t, to_bytes, a85)
assert w[0][3] == bf(1, 2, 3, float("inf")) and w[0][3][-2:] == b"\x80\x7f", w
# 027, 029: the split lists from pkb's int64 tensors, as 028's (issue 37:
# without, the lists' numbers were kept and pkb's splits left over, or the
# next tensor paired with them)
shape = lambda v: v.shape
names = ["local_tensor", "input_split_sizes", "output_split_sizes", "group"]
ours = [("local_tensor", "BF16", [4, 2], b""), ("input_split_sizes", "I64", [2], i64(1, 3)),
        ("output_split_sizes", "I64", [2], i64(2, 2))]
args = (T([4, 2]), [2, 2], [2, 2], None)
new, notes = substitute(args, names, ours, is_t, shape, take, {}, ADAPTERS[27])
assert new[1] == [1, 3] and new[2] == [2, 2] and notes == [], (new, notes)
refused(lambda: substitute(args, names, ours, is_t, shape, take),
        "pkb has inputs the original's arguments lack: input_split_sizes, output_split_sizes")
names = ["expert_outputs", "routing_weights", "selected_experts", "num_experts", "input_splits",
         "output_splits", "num_global_tokens_per_local_expert", "routing_map",
         "local_input_permutation_mapping", "org_hidden_states_shape", "group"]
ours = [("expert_outputs", "BF16", [8, 2], b""), ("routing_weights", "BF16", [4, 2], b""),
        ("selected_experts", "I64", [4, 2], b""), ("input_splits", "I64", [2], i64(5, 3)),
        ("output_splits", "I64", [2], i64(6, 2)),
        ("num_global_tokens_per_local_expert", "I64", [2, 4], b""),
        ("routing_map", "BOOL", [8, 4], b""), ("local_input_permutation_mapping", "I64", [8], b"")]
args = (T([8, 2]), T([4, 2]), T([4, 2]), 8, [4, 4], [4, 4], T([2, 4]), T([8, 4]), T([8]), (4, 2), None)
p29 = {"num_experts": 8, "org_hidden_states_shape[0]": 4, "org_hidden_states_shape[1]": 2}
new, notes = substitute(args, names, ours, is_t, shape, take, p29, ADAPTERS[29])
assert new[4] == [5, 3] and new[5] == [6, 2] and new[6].shape == (2, 4) and new[9] == (4, 2), new
assert new[8].shape == (8,) and not any("differs" in n for n in notes), notes
refused(lambda: substitute(args, names, ours, is_t, shape, take, p29),
        "input 3 'input_splits': the original's shape is [2, 4], pkb's [2]")
# 031, 032, 049: each parameter of the original's nn.Linear gets pkb's input
# <argument>.<parameter>; 032's LoRA factors after them still pair by position
class Mod:
    def __init__(self, **p): self.p = p
params_of = lambda v: list(v.p.items()) if isinstance(v, Mod) else None
loaded = {}
def take_m(o, leaf):
    loaded[o[0]] = leaf
    return T(o[2], o[3])
lin = lambda i, o: Mod(weight=T([o, i]), bias=T([o]))
names = ["hidden_states", "gate_weight", "gate_bias", "gate_proj", "up_proj", "down_proj",
         "lora_gate_A", "num_experts", "top_k", "group"]
args = (T([4, 16]), T([8, 16]), T([8]), lin(16, 8), lin(16, 8), lin(8, 16), T([2, 16]), 8, 2, None)
ours = [("hidden_states", "BF16", [4, 16], b""), ("gate_weight", "BF16", [8, 16], b""),
        ("gate_bias", "BF16", [8], b""), ("gate_proj.weight", "BF16", [8, 16], b""),
        ("gate_proj.bias", "BF16", [8], b""), ("up_proj.weight", "BF16", [8, 16], b""),
        ("up_proj.bias", "BF16", [8], b""), ("down_proj.weight", "BF16", [16, 8], b""),
        ("down_proj.bias", "BF16", [16], b""), ("lora_gate_A", "BF16", [2, 16], b"")]
p31 = {"num_experts": 8, "top_k": 2}
new, notes = substitute(args, names, ours, is_t, shape, take_m, p31, ADAPTERS[32], None, params_of)
assert new[3] is args[3] and new[5] is args[5] and new[6].shape == (2, 16), new
for m, k in ((3, "gate_proj"), (4, "up_proj"), (5, "down_proj")):
    for pn in ("weight", "bias"):
        assert loaded[f"{k}.{pn}"] is args[m].p[pn], (k, pn)
assert ADAPTERS[31]["modules"] == ADAPTERS[49]["modules"] == ADAPTERS[32]["modules"]
refused(lambda: substitute(args, names, ours, is_t, shape, take, p31),
        "input 3 'gate_proj.weight': the original's shape is [2, 16], pkb's [8, 16]")
refused(lambda: substitute(args[:6] + args[7:], names[:6] + names[7:], ours[:9], is_t, shape, take,
                           p31), "pkb has inputs the original's arguments lack: gate_proj.weight, "
        "gate_proj.bias, up_proj.weight, up_proj.bias, down_proj.weight, down_proj.bias")
big = ours[:3] + [("gate_proj.weight", "BF16", [128, 16], b"")] + ours[4:]
refused(lambda: substitute(args, names, big, is_t, shape, take, p31, ADAPTERS[32], None, params_of),
        "input 'gate_proj.weight': the original's parameter has shape [8, 16], pkb's [128, 16]")
refused(lambda: substitute(args, names, ours[:6] + ours[7:], is_t, shape, take, p31, ADAPTERS[32],
                           None, params_of), "argument 'up_proj': pkb has no input 'up_proj.bias'")
# 035: the README's rows per rank (its numbers at M = 1024), the rest the
# original's; another count on this rank is a layout
rows = ADAPTERS[35]["rows"]["x"]
assert [rows(1024, w, r) for w in (2, 4) for r in range(w)] == [768, 1280, 640, 896, 1152, 1408]
names, x = ["x", "gather_dim", "group"], [("x", "BF16", [1280, 8], b"")]
d35 = {"m": 1024, "world": 2, "rank": 1}
new, notes = substitute((T([1024, 8]), 0, None), names, x, is_t, shape, take, {"gather_dim": 0},
                        ADAPTERS[35], d35)
assert new[0].shape == (1280, 8), new
assert "input 'x': 1280 rows on rank 1, the original's 1024 on every rank" in notes, notes
refused(lambda: substitute((T([1024, 8]), 0, None), names, x, is_t, shape, take, {}, ADAPTERS[35],
                           dict(d35, rank=0)),
        "input 0 'x': pkb's shape is [1280, 8], the rows rule gives [768, 8] on rank 0")
refused(lambda: substitute((T([1024, 8]), 0, None), names, x, is_t, shape, take, {}),
        "input 0 'x': the original's shape is [1024, 8], pkb's [1280, 8]")
refused(lambda: substitute((T([1024, 8]), 0, None), names, x, is_t, shape, take, {}, ADAPTERS[35]),
        "which the saved metadata lacks")
# 061: K rows padded to pkb's capacity (2-D ones by rows), count = K
i32 = lambda *v: struct.pack(f"<{len(v)}i", *v)
a61 = ADAPTERS[61]
ours_out = [("camera_ids", "I64", [4], b""), ("gaussian_ids", "I64", [4], b""),
            ("radii", "I32", [4, 2], b""), ("means2d", "BF16", [4, 2], b""),
            ("depths", "BF16", [4], b""), ("conics", "BF16", [4, 3], b""),
            ("opacities", "BF16", [4], b""), ("colors", "BF16", [4, 3], b""),
            ("count", "I64", [], b"")]
y = (T([3], i64(0, 0, 0)), T([3], i64(5, 7, 9)), T([3, 2], i32(2, 3, 4, 5, 6, 7)),
     T([3, 2], bf(*range(6))), T([3], bf(1, 2, 3)), T([3, 3], bf(*range(9))),
     T([3], bf(.5, .5, .5)), T([3, 3], bf(*range(9))))
w, notes = gather(y, (), [], ours_out, is_t, to_bytes, a61)
assert w[0][3] == i64(0, 0, 0, -1) and w[1][3] == i64(5, 7, 9, -1), w
assert w[2][3] == i32(2, 3, 4, 5, 6, 7, 0, 0) and w[5][3] == bf(*range(9), 0, 0, 0), w
assert w[8] == ("count", "I64", [], i64(3)), w[8]
assert "output 'radii': the original's 3 rows padded with 0 to pkb's 4" in notes, notes
refused(lambda: gather(y, (), [], ours_out, is_t, to_bytes),
        "the original returns 8 tensors, pkb's problem 9")
y5 = (T([5], i64(0, 0, 0, 0, 0)),) + y[1:]
refused(lambda: gather(y5, (), [], ours_out, is_t, to_bytes, a61),
        "output 'camera_ids': the original's shape is [5], pkb's [4]")
y2 = y[:2] + (T([3, 1], i32(2, 3, 4)),) + y[3:]
refused(lambda: gather(y2, (), [], ours_out, is_t, to_bytes, a61),
        "output 'radii': the original's shape is [3, 1], pkb's [4, 2]")
refused(lambda: gather(y + (T([3]),), (), [], ours_out, is_t, to_bytes, a61),
        "the original returns 9 tensors, pkb's problem 8 besides count")
# 070: the original's values are sum(lengths) of pkb's, whatever its own
# lengths summed to (19040 where pkb's did to 19132, 2026-11-28); its
# result's padded
a70 = ADAPTERS[70]
names = ["lengths", "values", "key_splits", "batch_size", "pg"]
ours = [("lengths", "I64", [3], i64(2, 0, 1)), ("values", "I64", [6], i64(7, 8, 9, 0, 0, 0))]
args = (T([3]), T([3]), [1, 1], 1, None)
new, notes = substitute(args, names, ours, is_t, shape, take, {"batch_size": 1}, a70)
assert new[0].data == i64(2, 0, 1) and new[1].shape == (3,) and new[1].data == i64(7, 8, 9), new
assert "input 'values': the first sum(lengths) = 3 of pkb's 6" in notes, notes
assert not any("own lengths" in n for n in notes), notes
new, notes = substitute((T([3]), T([5])) + args[2:], names, ours, is_t, shape, take, {"batch_size": 1}, a70)
assert new[1].shape == (3,) and new[1].data == i64(7, 8, 9), new
assert "input 'values': the original's own lengths summed to 5" in notes, notes
refused(lambda: substitute(args, names, ours, is_t, shape, take, {"batch_size": 1}),
        "input 1 'values': the original's shape is [3], pkb's [6]")
refused(lambda: substitute(args, names, [ours[0], ("values", "I64", [2], b"")], is_t, shape, take,
                           {}, a70), "input 'values' [2]: cannot take the first sum(lengths) = 3")
# only the first dimension follows pkb's lengths; another pairing is a layout
refused(lambda: substitute((T([3]), T([5, 2])) + args[2:], names, ours, is_t, shape, take, {}, a70),
        "input 1 'values': the original's shape is [3, 2], pkb's [3]")
refused(lambda: substitute((T([3]), T([5])) + args[2:], names, ours[::-1], is_t, shape, take, {}, a70),
        "the original's 'values' pairs with pkb's input 1 'lengths'")
ours_out = [("lengths", "I64", [3], b""), ("values", "I64", [6], b""), ("stride", "I64", [], b""),
            ("stride_per_rank", "I64", [1], b"")]
y = {"lengths": T([3], i64(2, 0, 1)), "values": T([3], i64(7, 8, 9)), "stride": T([], i64(1)),
     "stride_per_rank": T([1], i64(1))}
w, _ = gather(y, new, names, ours_out, is_t, to_bytes, a70)
assert w[1][3] == i64(7, 8, 9, 0, 0, 0) and w[2][3] == i64(1), w
# 067: R received entries padded to pkb's W P, ids with -1, rows with 0;
# an R beyond W P is a layout, never cut
a67 = ADAPTERS[67]
ours_out = [("recv_idx", "I64", [4], b""), ("recv_value", "BF16", [4, 2], b"")]
y = (T([3], i64(4, 8, 2)), T([3, 2], bf(1, 2, 3, 4, 5, 6)))
w, notes = gather(y, (), [], ours_out, is_t, to_bytes, a67)
assert w[0][3] == i64(4, 8, 2, -1) and w[1][3] == bf(1, 2, 3, 4, 5, 6, 0, 0), w
assert "output 'recv_value': the original's 3 rows padded with 0 to pkb's 4" in notes, notes
refused(lambda: gather(y, (), [], ours_out, is_t, to_bytes),
        "output 'recv_idx': the original's shape is [3], pkb's [4]")
y5 = (T([5], i64(4, 8, 2, 6, 0)), T([5, 2], bf(*range(10))))
refused(lambda: gather(y5, (), [], ours_out, is_t, to_bytes, a67),
        "output 'recv_idx': the original's shape is [5], pkb's [4]")
# 068: pkb's shard has roundup(max(2^22, M), W)/W rows, and the original
# takes pkb's num_total_nodes in place of its own 111e6 (the layout of
# 2026-11-28 without the adapter); another count, or no such param, is a
# layout
a68 = ADAPTERS[68]
rows = a68["rows"]["local_embedding_shard"]
assert [rows(1024, w, 0) for w in (2, 3, 4, 8)] == [2097152, 1398102, 1048576, 524288]
assert rows(3 << 22, 2, 1) == 3 << 21
names = ["local_embedding_shard", "input_node_ids", "proj_matrix", "num_total_nodes", "group"]
ours = [("local_embedding_shard", "BF16", [2097152, 256], b""), ("input_node_ids", "I64", [20000], b""),
        ("proj_matrix", "BF16", [256, 256], b"")]
args = (T([55500000, 256]), T([20000]), T([256, 256]), 111000000, None)
d68 = {"m": 1024, "world": 2, "rank": 0}
new, notes = substitute(args, names, ours, is_t, shape, take, {"num_total_nodes": 4194304}, a68, d68)
assert new[0].shape == (2097152, 256) and new[3] == 4194304 and type(new[3]) is int, new
assert "the original's scalar num_total_nodes=111000000 replaced by pkb's num_total_nodes=4194304" in notes, notes
refused(lambda: substitute(args, names, ours, is_t, shape, take, {"num_total_nodes": 4194304}),
        "input 0 'local_embedding_shard': the original's shape is [55500000, 256], pkb's [2097152, 256]")
refused(lambda: substitute(args, names, ours, is_t, shape, take, {"num_total_nodes": 4194304}, a68,
                           dict(d68, world=4)),
        "input 0 'local_embedding_shard': pkb's shape is [2097152, 256], the rows rule gives [1048576, 256]")
refused(lambda: substitute(args, names, ours, is_t, shape, take, {}, a68, d68),
        "argument 'num_total_nodes': pkb's param of that name is None")
refused(lambda: substitute(args, names, ours, is_t, shape, take, {"num_total_nodes": 4194304.5}, a68, d68),
        "argument 'num_total_nodes': pkb's param of that name is 4194304.5")
# 050: 049's modules (two experts a rank); 061: the original runs in fp32
assert ADAPTERS[50]["modules"] == ADAPTERS[49]["modules"] and ADAPTERS[61]["upcast"] == "float32"
# 062: psi, a sparse COO tensor there, is pkb's psi_indices and psi_values;
# its size is the original's, another nnz or rank a layout
a62 = ADAPTERS[62]
names = ["x", "psi", "weight", "groups", "nlon_out", "nlon_in", "azimuth_group", "polar_group", "bias"]
ours = [("x", "F32", [2, 8, 4, 4], b""), ("psi_indices", "I64", [3, 6], i64(*range(18))),
        ("psi_values", "F32", [6], b"v" * 24), ("weight", "F32", [8, 8, 3], b""), ("bias", "F32", [8], b"")]
args = (T([2, 8, 4, 4]), T([3, 4, 32]), T([8, 8, 3]), 1, 8, 8, None, None, T([8]))
built = []
def sp(ie, ve, leaf):
    built.append((ie[0], ie[2], ve[0], ve[3], leaf.shape))
    return T(leaf.shape, b"sparse")
new, notes = substitute(args, names, ours, is_t, shape, take, {"groups": 1, "nlon_out": 8, "nlon_in": 8},
                        a62, None, None, sp)
assert built == [("psi_indices", [3, 6], "psi_values", b"v" * 24, (3, 4, 32))], built
assert new[1].data == b"sparse" and new[2].shape == (8, 8, 3) and new[8].shape == (8,), new
assert "input 'psi': a sparse [3, 4, 32] tensor of pkb's 'psi_indices' and 'psi_values' (6 entries)" in notes, notes
refused(lambda: substitute(args, names, ours, is_t, shape, take, {}),
        "input 1 'psi_indices': the original's shape is [3, 4, 32], pkb's [3, 6]")
refused(lambda: substitute((args[0], T([4, 32])) + args[2:], names, ours, is_t, shape, take, {}, a62, None,
                           None, sp), "argument 'psi': the original's [4, 32] does not take pkb's 'psi_indices' [3, 6]")
# 063: H, weights and P are lists of 8 there, stacked here; the results too
a63 = ADAPTERS[63]
f64 = lambda *v: struct.pack(f"<{len(v)}d", *v)
names = ["H", "error", "weights", "P", "kalman_lambda", "kalman_nue"]
ours = [("H", "F64", [2, 3, 1], f64(1, 2, 3, 4, 5, 6)), ("error", "F64", [], f64(9)),
        ("weights", "F64", [2, 3, 1], f64(*range(6))), ("P", "F64", [2, 3, 3], f64(*range(18)))]
args = ([T([3, 1]), T([3, 1])], T([]), [T([3, 1]), T([3, 1])], [T([3, 3]), T([3, 3])], 0.98, 0.9987)
p63 = {"kalman_lambda": 0.98, "kalman_nue": 0.9987}
new, notes = substitute(args, names, ours, is_t, shape, take, p63, a63)
assert [x.data for x in new[0]] == [f64(1, 2, 3), f64(4, 5, 6)] and new[1].data == f64(9), new
assert new[3][1].shape == (3, 3) and new[3][1].data == f64(*range(9, 18)) and new[4] == 0.98, new
refused(lambda: substitute(args, names, ours, is_t, shape, take, p63),
        "input 0 'H': the original's shape is [3, 1], pkb's [2, 3, 1]")
refused(lambda: substitute(([T([3, 1])],) + args[1:], names, ours, is_t, shape, take, p63, a63),
        "argument 'H': the original's is not a list of 2 tensors")
refused(lambda: substitute(([T([3, 1]), T([1, 3])],) + args[1:], names, ours, is_t, shape, take, p63, a63),
        "argument 'H[1]': the original's is [1, 3], a row of pkb's 'H' [3, 1]")
ours_out = [("weights", "F64", [4, 3, 1], b""), ("P", "F64", [2, 3, 3], b""),
            ("kalman_lambda_next", "F64", [], b"")]
y = ([T([3, 1], f64(k, k, k)) for k in range(4)], [T([3, 3], f64(*[k] * 9)) for k in range(2)], T([], f64(0.5)))
w, notes = gather(y, new, names, ours_out, is_t, to_bytes, a63)
assert w[0] == ("weights", "F64", [4, 3, 1], f64(*[k for k in range(4) for _ in range(3)])), w[0]
assert w[1][3] == f64(*[0] * 9, *[1] * 9) and w[2] == ("kalman_lambda_next", "F64", [], f64(0.5)), w
assert "output 'weights': the original's 4 tensors [3, 1] stacked" in notes, notes
refused(lambda: gather(y, new, names, ours_out, is_t, to_bytes), "the original returns 7 tensors, pkb's problem 3")
refused(lambda: gather((y[0][:3],) + y[1:], new, names, ours_out, is_t, to_bytes, a63),
        "the original returns 6 tensors, pkb's problem's outputs take 7 (weights: 4, P: 2, kalman_lambda_next: 1)")
y2 = ([T([3, 1])] * 3 + [T([1, 3])],) + y[1:]
refused(lambda: gather(y2, new, names, ours_out, is_t, to_bytes, a63),
        "output 'weights[3]': the original's shape is [1, 3], a row of pkb's [4, 3, 1]")
assert sorted(ADAPTERS) == [21, 22, 27, 28, 29, 31, 32, 35, 49, 50, 61, 62, 63, 64, 67, 68, 70, 85]
assert all(a["why"] for a in ADAPTERS.values())
# each is its problem's README's deviation, and that README says so
import glob, os
for pid in ADAPTERS:
    (readme,) = glob.glob(os.path.join(os.environ["ROOT"], "problems", f"{pid:03d}_*", "README.md"))
    assert "crosscheck" in open(readme).read(), readme
EOF

# usage: the checkout is required and must be one; crosscheck.py says the same
expect_exit 2 "$ROOT/tools/crosscheck"
expect_grep "^crosscheck: -r CHECKOUT \(the original repository\) is required" "$TMP/err"
mkdir -p "$TMP/notorig"
expect_exit 2 "$ROOT/tools/crosscheck" -r "$TMP/notorig"
expect_grep "is not a checkout of the original ParallelKernelBench \(no utils/input_output_tensors.py\)" "$TMP/err"
mkdir -p "$TMP/orig/utils" "$TMP/orig/reference"
touch "$TMP/orig/utils/input_output_tensors.py" "$TMP/orig/utils/init_and_finalize_backends.py"
expect_exit 2 "$ROOT/tools/crosscheck" -r "$TMP/orig" -t 5s
expect_grep "^crosscheck: -t wants whole seconds, not '5s'" "$TMP/err"
expect_exit 2 "$ROOT/tools/crosscheck" -r "$TMP/orig" -c 2m
expect_grep "^crosscheck: -c wants whole seconds, not '2m'" "$TMP/err"

# --within: a command under a deadline, killed with everything it started,
# a process that left its group (setsid, as pkb's ranks setpgid) too: 124
# when the time ran out, the command's own status otherwise
expect_exit 124 python3 "$ROOT/tools/crosscheck.py" --within 1 -- sh -c \
	"setsid sh -c 'echo \$\$ > $TMP/w.pid; exec sleep 300' & echo \$\$ > $TMP/w0.pid; sleep 300"
expect_exit 0 python3 - "$TMP/w.pid" "$TMP/w0.pid" <<'EOF'
import os, sys, time
time.sleep(0.3)
for f in sys.argv[1:]:
    pid = int(open(f).read())
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        continue
    raise AssertionError(f"{f}: process {pid} outlived --within")
EOF
expect_exit 3 python3 "$ROOT/tools/crosscheck.py" --within 5 -- sh -c 'exit 3'
# ended by itself, what it orphaned goes too
expect_exit 0 python3 "$ROOT/tools/crosscheck.py" --within 5 -- sh -c \
	"setsid sh -c 'echo \$\$ > $TMP/w2.pid; exec sleep 300' & sleep 0.3"
expect_exit 1 python3 -c "import os, sys; os.kill(int(open(sys.argv[1]).read()), 0)" "$TMP/w2.pid"
expect_exit 1 python3 "$ROOT/tools/crosscheck.py" --within 5 sleep 1
expect_grep "usage: crosscheck.py --within SECONDS -- COMMAND" "$TMP/err"
# the original's timing in fewer calls when its 500 + 100 would not fit
expect_exit 0 python3 - <<'EOF'
from crosscheck import timing_counts
assert timing_counts(500, 100, 0.001, 60) == (500, 100)
assert timing_counts(500, 100, 0.1, None) == (500, 100)
assert timing_counts(500, 100, 1.0, 60) == (50, 10)     # 064's: about a second a call
assert timing_counts(500, 100, 0.05, 5) == (84, 16)
assert timing_counts(500, 100, 100, 60) == (1, 5)       # the least: 1 + 5
EOF

# the driver's flow on fake ranks (pkb run passes, saves nothing) with a
# stand-in torch package that has no torch.distributed: each case is an
# original_failed line naming the error, the table is written, a second
# call keeps what the file holds and runs only what it lacks
mkdir -p "$TMP/mods/torch"
: > "$TMP/mods/torch/__init__.py"
export PKB_RANK_CMD=$ROOT/build/tests/fake_rank PKB_TEST_GPUS=2
PYTHONPATH=$TMP/mods expect_exit 1 "$ROOT/tools/crosscheck" -r "$TMP/orig" -p 1,2 -w 2 -o "$TMP/x.jsonl"
expect_grep "^original_failed +001_allreduce W=2 bf16 +rank [01]: ModuleNotFoundError: No module named 'torch.distributed'" "$TMP/out"
expect_grep "^crosscheck: 0 agree, 2 do not" "$TMP/out"
expect_exit 0 python3 - "$TMP/x.jsonl" <<'EOF'
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])]
assert [(x["problem"], x["world"], x["result"]) for x in r] == [
    ("001_allreduce", 2, "original_failed"), ("002_allgather", 2, "original_failed")], r
assert r[0]["m"] == 1024 and r[0]["dtype"] == "bf16" and "ours_ms" not in r[0], r[0]
EOF
expect_grep "^\| 001_allreduce \| 2 \| bf16 \| original_failed \|" "$TMP/x.md"
PYTHONPATH=$TMP/mods expect_exit 1 "$ROOT/tools/crosscheck" -r "$TMP/orig" -p 1,2,3 -w 2 -o "$TMP/x.jsonl" -t 1
expect_grep "^kept +001_allreduce W=2 bf16" "$TMP/out"
expect_grep "^kept +002_allgather W=2 bf16" "$TMP/out"
expect_grep "^(original_failed|not_run) +003_broadcast W=2" "$TMP/out"
expect_grep "^crosscheck: 0 agree, 3 do not" "$TMP/out"

# The whole flow on fake ranks that save files made here (PKB_FAKE_SAVE:
# pkb's inputs and outputs), a stand-in torch and a stand-in original
# (tests/cli/crosscheck/): every result goes through tools/crosscheck's own
# reading of the ranks' reports into its record.
#   001 agrees (the original returns its input; an empty detail: issue 37)
#   002 disagrees at element 4, 003 returns two tensors for pkb's one,
#   004 raises; 040 takes pkb's 0-dim `step` by name, not into `lr` (issue
#   37), keeps lr and beta1 and says that beta1 differs from pkb's param;
#   085's adapter gives the original pkb's first local_n values and pads its
#   shorter result with +inf (rank 1 holds 5 of 8)
expect_exit 0 python3 - "$TMP/saves" <<'EOF'
import os, struct, sys
from crosscheck import write_st
d = sys.argv[1]
bf16 = lambda vals: b"".join(struct.pack("<f", v)[2:] for v in vals)
i64 = lambda vals: struct.pack(f"<{len(vals)}q", *vals)
def save(pid, r, ins, outs, into=d, **meta):
    os.makedirs(os.path.join(into, f"{pid:03d}"), exist_ok=True)
    for what, ts in (("inputs", ins), ("outputs", outs)):
        m = {"pkb_problem": str(pid), "world": "2", "rank": str(r), "m": "1024", "n": "1024",
             "dtype": "bf16", "trial": "0", "order": ",".join(t[0] for t in ts)}
        m.update(meta)
        write_st(os.path.join(into, f"{pid:03d}", f"rank_{r}_{what}.safetensors"), ts, m)
for r in range(2):
    x = bf16([0.25 * i + r for i in range(6)])
    for pid in (1, 2, 3, 4, 5, 6, 7, 8, 48):
        save(pid, r, [("x", "BF16", [2, 3], x)], [("out", "BF16", [2, 3], x)])
    save(9, r, [("x", "BF16", [2, 3], x)], [("out", "BF16", [2], bf16([0, 0]))])
    save(40, r, [("x", "BF16", [2], bf16([0, 0])), ("step", "I64", [], struct.pack("<q", 3))],
         [("out", "F32", [3], struct.pack("<3f", 1e-3, 0.9, 3))],
         params='{"lr": 0.001, "beta1": 0.8}')
    # 031: the stand-in returns its module's weight and bias, zeros unless loaded
    wb = bf16([0.5 * i - r for i in range(6)]), bf16([2.0 + r, -1.0])
    save(31, r, [("hidden_states", "BF16", [2, 3], x), ("gate_proj.weight", "BF16", [2, 3], wb[0]),
                 ("gate_proj.bias", "BF16", [2], wb[1])], [("out", "BF16", [8], wb[0] + wb[1])])
    # 035: rank r's rows by the README's rule (768, 1280 at M = 1024, W = 2)
    x35 = bf16([(i % 7) - r for i in range((768, 1280)[r] * 2)])
    save(35, r, [("x", "BF16", [(768, 1280)[r], 2], x35)], [("out", "BF16", [(768, 1280)[r], 2], x35)],
         params='{"gather_dim": 0}')
    vals, n = ([3, 1, 2, 8, 7, 5, 6, 4], 8) if r == 0 else ([9, -2, 4, 0, 1, 99, 99, 99], 5)
    save(85, r, [("local_shard", "BF16", [8], bf16(vals)), ("local_n", "I64", [], struct.pack("<q", n))],
         [("sorted_slice", "BF16", [8], bf16(sorted(vals[:n]) + [float("inf")] * (8 - n)))])
# 067 and 070 (below), and copies with bad outputs in ../short and ../wrong
for case in ("saves", "short", "wrong"):
    into = d if case == "saves" else os.path.join(os.path.dirname(d), case)
    for r in range(2):
        # 067: rank r keeps its own ids of owner r (the stand-in moves none)
        idx = [[3, 4, 6, 9], [10, 7, 5, 2]][r]
        rows = [[1, 2], [3, 4], [5, 6], [7, 8]] if r == 0 else [[-1, -2], [-3, -4], [-5, -6], [-7, -8]]
        keep = [i for i in range(4) if idx[i] % 2 == r]
        if case == "short" and r == 0:
            keep = keep[:-1]
        got = [v for i in keep for v in rows[i]] + [0] * (12 - 2 * len(keep))
        if case == "wrong" and r == 0:
            got[3] += 1
        save(67, r, [("idx", "I64", [4], i64(idx)), ("value", "BF16", [4, 2], bf16(sum(rows, [])))],
             [("recv_idx", "I64", [6], i64([idx[i] for i in keep] + [-1] * (6 - len(keep)))),
              ("recv_value", "BF16", [6, 2], bf16(got))], params='{"num_nodes": 100000}', into=into)
        # 070: values' first sum(lengths) count, then filler (99); the
        # result's are padded with zeros
        lengths, vals = ([2, 0, 3, 1], [11, 12, 13, 14, 15, 16]) if r == 0 else ([1, 1, 1, 1], [21, 22, 23, 24])
        out = vals[:-1] if case == "short" and r == 0 else list(vals)
        if case == "wrong" and r == 1:
            out[3] += 1
        save(70, r, [("lengths", "I64", [4], i64(lengths)),
                     ("values", "I64", [12], i64(vals + [99] * (12 - len(vals))))],
             [("lengths", "I64", [4], i64(lengths)), ("values", "I64", [12], i64(out + [0] * (12 - len(out)))),
              ("stride", "I64", [], i64([2])), ("stride_per_rank", "I64", [2], i64([2, 2]))],
             params='{"batch_size": 2}', into=into)
# 068: 2^21 rows a rank of E = 2 (8 MiB), zero but for the rows asked
shard, e = 1 << 21, 2
for r in range(2):
    ids = [r * shard + x for x in (5, shard - 1, 0)]
    table = bytearray(shard * e * 2)
    emb = {5: [1, 2], shard - 1: [3, -1], 0: [-2, 4]}
    for row, v in emb.items():
        table[row * e * 2:(row + 1) * e * 2] = bf16(v)
    proj = [1, 2, 0, 1 + r]
    out = [x for k in (5, shard - 1, 0) for x in (emb[k][0], 2 * emb[k][0] + (1 + r) * emb[k][1])]
    save(68, r, [("local_embedding_shard", "BF16", [shard, e], bytes(table)),
                 ("input_node_ids", "I64", [3], i64(ids)), ("proj_matrix", "BF16", [e, e], bf16(proj))],
         [("out", "BF16", [3, e], bf16(out))], params='{"num_total_nodes": %d}' % (2 * shard))
EOF
XC=$ROOT/tests/cli/crosscheck
export PKB_FAKE_SAVE=$TMP/saves
PYTHONPATH=$XC expect_exit 1 "$ROOT/tools/crosscheck" -r "$XC/orig" -p 1,2,3,4,40,85 -w 2 -o "$TMP/y.jsonl"
expect_grep "^agree +001_allreduce W=2 bf16 *$" "$TMP/out"
expect_grep "^disagree +002_allgather W=2 bf16 +rank 0 out +MISMATCH: 1 of 6 wrong; worst at 4" "$TMP/out"
expect_grep "^layout +003_broadcast W=2 bf16 +rank [01]: the original returns 2 tensors, pkb's problem 1" "$TMP/out"
expect_grep "^original_failed +004_reduce W=2 bf16 +rank [01]: RuntimeError: the original's own error" "$TMP/out"
expect_grep "^agree +040_ddp W=2 bf16" "$TMP/out"
expect_grep "^agree +085_distributed_sample_sort W=2 bf16" "$TMP/out"
expect_grep "^crosscheck: 3 agree, 3 do not" "$TMP/out"
expect_exit 0 python3 - "$TMP/y.jsonl" <<'EOF'
import json, sys
r = {x["problem"][:3]: x for x in map(json.loads, open(sys.argv[1]))}
assert [(p, x["result"]) for p, x in r.items()] == [("001", "agree"), ("002", "disagree"),
    ("003", "layout"), ("004", "original_failed"), ("040", "agree"), ("085", "agree")], r
assert r["001"]["detail"] == "" and r["001"]["original"] == "reference/1_agree.py", r["001"]
n40 = r["040"]["notes"]
assert "the original's scalar lr=0.001 kept" in n40, n40
assert "the original's scalar beta1=0.9 kept, differs from pkb's beta1=0.8" in n40, n40
assert not any("step" in n for n in n40), n40
n85 = r["085"]["notes"]
assert any(n.startswith("crosscheck adapter (problems/085_") for n in n85), n85
assert any("'sorted_slice'" in n and "padded" in n for n in n85), n85
assert all("perf_error" not in x and "original_ms" not in x for x in r.values()), r
EOF
expect_grep "^\| 001_allreduce \| 2 \| bf16 \| agree \|" "$TMP/y.md"
# the adapters' torch side: 031's module loaded with pkb's weights (a zero
# result otherwise), 035's rows taken on each rank from the saved M, W, rank
PYTHONPATH=$XC expect_exit 0 "$ROOT/tools/crosscheck" -r "$XC/orig" -p 31,35 -w 2 -o "$TMP/m.jsonl"
expect_grep "^agree +031_fused_moe_fwd W=2 bf16" "$TMP/out"
expect_grep "^agree +035_ulysses_all_gather_variable_primitive W=2 bf16" "$TMP/out"
expect_exit 0 python3 - "$TMP/m.jsonl" <<'EOF'
import json, sys
r = {x["problem"][:3]: x for x in map(json.loads, open(sys.argv[1]))}
assert any(n.startswith("crosscheck adapter (problems/031_") for n in r["031"]["notes"]), r["031"]
assert "input 'x': 768 rows on rank 0, the original's 1024 on every rank" in r["035"]["notes"], r["035"]
EOF
# 067, 068 and 070, the layouts of 2026-11-28 at W = 2, through their
# adapters: 067's R received entries padded as pkb pads them; 068's original
# on pkb's 2^22-row table with pkb's num_total_nodes (with its own 111e6,
# rank 1's ids would be rank 0's); 070's given the first sum(pkb's lengths)
# values where its own were 7 long. Right outputs agree; and no adapter
# hides a bug of pkb's: an entry or an id missing (R or the length one
# short, the rest padded as ever: $TMP/short) or one value wrong
# ($TMP/wrong) is a disagree
PYTHONPATH=$XC expect_exit 0 "$ROOT/tools/crosscheck" -r "$XC/orig" -p 67,68,70 -w 2 -o "$TMP/a.jsonl"
expect_grep "^agree +067_gnn_sparse_embedding_all2all W=2 bf16" "$TMP/out"
expect_grep "^agree +068_gnn_sparse_feature_fetch_projection W=2 bf16" "$TMP/out"
expect_grep "^agree +070_torchrec_kjt_all2all W=2 bf16" "$TMP/out"
expect_exit 0 python3 - "$TMP/a.jsonl" <<'EOF'
import json, sys
r = {x["problem"][:3]: x for x in map(json.loads, open(sys.argv[1]))}
n = {p: x["notes"] for p, x in r.items()}
assert "output 'recv_idx': the original's 2 elements padded with -1 to pkb's 6" in n["067"], n["067"]
assert "the original's scalar num_nodes=100000 kept" in n["067"], n["067"]
assert "the original's scalar num_total_nodes=111000000 replaced by pkb's num_total_nodes=4194304" in n["068"], n["068"]
assert "input 'local_embedding_shard': 2097152 rows on rank 0, the original's 8 on every rank" in n["068"], n["068"]
assert "input 'values': the original's own lengths summed to 7" in n["070"], n["070"]
assert "input 'values': the first sum(lengths) = 6 of pkb's 12" in n["070"], n["070"]
EOF
PKB_FAKE_SAVE=$TMP/short PYTHONPATH=$XC expect_exit 1 "$ROOT/tools/crosscheck" -r "$XC/orig" -p 67,70 -w 2 \
	-o "$TMP/short.jsonl"
expect_grep "^disagree +067_gnn_sparse_embedding_all2all W=2 bf16 +rank 0 recv_idx +MISMATCH: 1 of 6 wrong; worst at 1:" "$TMP/out"
expect_grep "^disagree +070_torchrec_kjt_all2all W=2 bf16 +rank 0 values +MISMATCH: 1 of 12 wrong; worst at 5:" "$TMP/out"
PKB_FAKE_SAVE=$TMP/wrong PYTHONPATH=$XC expect_exit 1 "$ROOT/tools/crosscheck" -r "$XC/orig" -p 67,70 -w 2 \
	-o "$TMP/wrong.jsonl"
expect_grep "^disagree +067_gnn_sparse_embedding_all2all W=2 bf16 +rank 0 recv_value +MISMATCH: 1 of 12 wrong; worst at 3:" "$TMP/out"
expect_grep "^disagree +070_torchrec_kjt_all2all W=2 bf16 +rank 1 values +MISMATCH: 1 of 12 wrong; worst at 3:" "$TMP/out"
# in lanes: on four GPUs two cases at W = 2 run at once, each on a set of
# its own (the record's gpus); every case is recorded once, as on one set
PKB_TEST_GPUS=4 PYTHONPATH=$XC expect_exit 1 "$ROOT/tools/crosscheck" -r "$XC/orig" -p 1,2,3,4,40,85 -w 2 -o "$TMP/l.jsonl"
expect_grep "^crosscheck: 3 agree, 3 do not" "$TMP/out"
expect_exit 0 python3 - "$TMP/l.jsonl" "$TMP/y.jsonl" <<'EOF'
import json, re, sys
lanes, one = ([json.loads(l) for l in open(f)] for f in sys.argv[1:])
# which rank's error a failing case names is whichever failed first
key = lambda x: (x["problem"], x["result"], re.sub(r"rank \d+", "rank R", x["detail"]), x["notes"])
assert sorted(map(key, lanes)) == sorted(map(key, one)), (lanes, one)
assert {x["gpus"] for x in lanes} == {"0,1", "2,3"}, [x["gpus"] for x in lanes]
assert {x["gpus"] for x in one} == {"0,1"}, [x["gpus"] for x in one]
EOF
# -T: the timing has its own try. 005's timed calls fail: it still agrees,
# and its record says why it has no time (perf_error); 048's original makes
# new groups on every call (the stand-in's NCCL runs out past 8): cached by
# rank list while timing, it is timed
PYTHONPATH=$XC expect_exit 0 "$ROOT/tools/crosscheck" -r "$XC/orig" -p 1,5,48 -w 2 -T -o "$TMP/z.jsonl"
expect_grep "^agree +005_scatter W=2 bf16" "$TMP/out"
expect_grep "^crosscheck: 3 agree, 0 do not" "$TMP/out"
expect_exit 0 python3 - "$TMP/z.jsonl" <<'EOF'
import json, sys
r = {x["problem"][:3]: x for x in map(json.loads, open(sys.argv[1]))}
for p in ("001", "048"):
    assert r[p]["original_ms"] == 0.5 and "ours_ms" in r[p] and "perf_error" not in r[p], r[p]
    assert r[p]["ours_over_original"] > 0, r[p]
assert r["005"]["result"] == "agree" and "original_ms" not in r["005"], r["005"]
assert r["005"]["perf_error"].startswith("rank "), r["005"]
assert "RuntimeError: a timed call failed" in r["005"]["perf_error"], r["005"]
EOF
expect_grep "^\| 005_scatter \| 2 \| bf16 \| agree \|.*timing failed: rank" "$TMP/z.md"
# Deadlines. 007's original never returns (nor writes a report): past the
# per-case cap (-c 8) it is a timeout in phase "original", its line and
# record written when it ends, its rank processes gone; the cases around it
# run as ever. 008's calls take 50 ms: its 500 + 100 timed calls would
# outlast the cap (-c 15), fewer are made, and the notes say so
mkdir -p "$TMP/pids"
t0=$(date +%s)
XC_PIDS=$TMP/pids PYTHONPATH=$XC expect_exit 1 "$ROOT/tools/crosscheck" -r "$XC/orig" -p 1,7,85 -w 2 -c 8 \
	-o "$TMP/d.jsonl"
t1=$(date +%s)
expect_grep "^agree +001_allreduce W=2 bf16" "$TMP/out"
expect_grep "^timeout \(original\) +007_reducescatter W=2 bf16 +the original ran past the case's 8 s \(the per-case cap, -c\)" "$TMP/out"
expect_grep "^agree +085_distributed_sample_sort W=2 bf16" "$TMP/out"
expect_grep "^\| 007_reducescatter \| 2 \| bf16 \| timeout \(original\) \|" "$TMP/d.md"
expect_exit 0 test $((t1 - t0)) -lt 40
expect_exit 0 python3 - "$TMP/d.jsonl" "$TMP/pids" <<'EOF'
import json, os, sys, time
r = {x["problem"][:3]: x for x in map(json.loads, open(sys.argv[1]))}
assert r["007"]["result"] == "timeout" and r["007"]["phase"] == "original", r["007"]
assert r["007"]["limit_s"] == 8 and r["007"]["cut_by_budget"] is False, r["007"]
assert "phase" not in r["001"] and r["001"]["result"] == "agree", r["001"]
pids = os.listdir(sys.argv[2])
assert len(pids) == 2, pids
time.sleep(0.5)
for p in pids:
    try:
        os.kill(int(p), 0)
    except ProcessLookupError:
        continue
    raise AssertionError(f"rank process {p} outlived its case")
EOF
for p in $(ls "$TMP/pids"); do kill -9 "$p" 2>/dev/null; done   # left behind: this test's own
rm -f "$TMP/pids"/*
PYTHONPATH=$XC expect_exit 0 "$ROOT/tools/crosscheck" -r "$XC/orig" -p 8 -w 2 -c 15 -T -o "$TMP/s.jsonl"
expect_grep "^agree +008_alltoall W=2 bf16" "$TMP/out"
expect_exit 0 python3 - "$TMP/s.jsonl" <<'EOF'
import json, re, sys
(r,) = map(json.loads, open(sys.argv[1]))
assert r["original_ms"] == 0.5 and "perf_error" not in r, r
n = [x for x in r["notes"] if x.startswith("the original timed over ")]
# (each rank's note: the stand-in's all-reduce sees one rank's figures)
assert 1 <= len(n) <= 2 and all(re.match(r"the original timed over \d+ \+ \d+ calls, not 500 \+ 100: one takes 0\.05 s, \d+ s were left", x) for x in n), n
EOF
# the original's bf16/fp16 GEMMs reduce in fp32, as pkb's (009's stand-in
# returns the flags it runs under: 0 = torch's reduced-precision split-K
# reductions off), and the notes say so; -g leaves torch's defaults on
PYTHONPATH=$XC expect_exit 0 "$ROOT/tools/crosscheck" -r "$XC/orig" -p 9 -w 2 -o "$TMP/g.jsonl"
expect_grep "^agree +009_layernorm_backward W=2 bf16" "$TMP/out"
expect_grep "the original's bf16/fp16 GEMMs reduce in fp32" "$TMP/g.jsonl"
PYTHONPATH=$XC expect_exit 1 "$ROOT/tools/crosscheck" -r "$XC/orig" -p 9 -w 2 -g -o "$TMP/g2.jsonl"
expect_grep "^disagree +009_layernorm_backward W=2 bf16 +rank 0 out +MISMATCH: 2 of 2 wrong" "$TMP/out"
expect_grep "with torch's default reductions \(-g: the control\)" "$TMP/g2.jsonl"
# a torch older than 2.10 takes only a bool: fp32 reductions all the same,
# and the note says split-K stayed on; restore gives back the defaults
expect_exit 0 python3 - <<'EOF'
import types
from crosscheck import full_precision_gemms
class Old:
    def __setattr__(self, k, v):
        if isinstance(v, tuple):
            raise TypeError("expected bool")
        object.__setattr__(self, k, v)
m = Old()
m.allow_bf16_reduced_precision_reduction = m.allow_fp16_reduced_precision_reduction = True
torch = types.SimpleNamespace(backends=types.SimpleNamespace(cuda=types.SimpleNamespace(matmul=m)))
notes = []
restore = full_precision_gemms(torch, notes)
assert m.allow_bf16_reduced_precision_reduction is False and m.allow_fp16_reduced_precision_reduction is False
assert len(notes) == 1 and "split-K on (this torch takes no allow_splitk)" in notes[0], notes
restore()
assert m.allow_bf16_reduced_precision_reduction is True and m.allow_fp16_reduced_precision_reduction is True
EOF
# the control's record says so (gemm_reductions; pkb list skips it: t0220),
# and neither kind of record is kept for the other: the comparison of 009
# runs in g2's file all the same, and the control again is kept
expect_exit 0 python3 - "$TMP/g.jsonl" "$TMP/g2.jsonl" <<'EOF'
import json, sys
from crosscheck import gemm_reductions
(g,), (g2,) = ([json.loads(l) for l in open(f)] for f in sys.argv[1:])
assert g["gemm_reductions"] == "fp32" and g2["gemm_reductions"] == "torch_default", (g, g2)
del g2["gemm_reductions"]   # a record from before the field: its note says -g
assert gemm_reductions(g2) == "torch_default" and gemm_reductions({"notes": []}) == "fp32", g2
EOF
PYTHONPATH=$XC expect_exit 1 "$ROOT/tools/crosscheck" -r "$XC/orig" -p 9 -w 2 -o "$TMP/g2.jsonl"
expect_grep "^agree +009_layernorm_backward W=2 bf16" "$TMP/out"
expect_grep "^crosscheck: 1 agree, 1 do not" "$TMP/out"
PYTHONPATH=$XC expect_exit 1 "$ROOT/tools/crosscheck" -r "$XC/orig" -p 9 -w 2 -g -o "$TMP/g2.jsonl"
expect_grep "^kept +009_layernorm_backward W=2 bf16" "$TMP/out"
# pkb's own run past the deadline (its ranks hang, in process groups of
# their own): a timeout in phase "ours", and no rank left
cp "$ROOT/build/tests/fake_rank" "$TMP/fr_hang"
PKB_RANK_CMD=$TMP/fr_hang PKB_FAKE_MODE=hang PYTHONPATH=$XC expect_exit 1 "$ROOT/tools/crosscheck" \
	-r "$XC/orig" -p 1 -w 2 -c 5 -o "$TMP/h.jsonl"
expect_grep "^timeout \(ours\) +001_allreduce W=2 bf16 +pkb run --save ran past the case's 5 s" "$TMP/out"
sleep 0.3
expect_exit 1 pgrep -f "$TMP/fr_hang"
# -t: a case is cut short by what the budget has left (then the next call
# runs it again), and none starts once it is spent (not_run)
XC_PIDS=$TMP/pids PYTHONPATH=$XC expect_exit 1 "$ROOT/tools/crosscheck" -r "$XC/orig" -p 7 -w 2 -c 0 -t 12 \
	-o "$TMP/b.jsonl"
expect_grep "^timeout \(original\) +007_reducescatter W=2 bf16 +the original ran past the case's ([1-9]|1[0-2]) s \(what was left of the -t budget\)" "$TMP/out"
for p in $(ls "$TMP/pids"); do kill -9 "$p" 2>/dev/null; done
PYTHONPATH=$XC expect_exit 1 "$ROOT/tools/crosscheck" -r "$XC/orig" -p 1,7 -w 2 -t 5 -o "$TMP/b.jsonl"
expect_grep "^not_run +001_allreduce W=2 bf16 +the 5 s budget \(-t\) was spent \([0-5] s left, a case needs 10\)" "$TMP/out"
expect_grep "^not_run +007_reducescatter W=2 bf16" "$TMP/out"
expect_exit 0 python3 - "$TMP/b.jsonl" <<'EOF'
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])]
assert [(x["problem"][:3], x["result"], x.get("cut_by_budget")) for x in r] == [
    ("007", "timeout", True), ("001", "not_run", None), ("007", "not_run", None)], r
EOF
# a run killed from outside keeps every case it finished, in the results,
# the table and on stdout, and leaves no rank behind
XC_PIDS=$TMP/pids PYTHONPATH=$XC expect_exit 124 timeout 10 "$ROOT/tools/crosscheck" -r "$XC/orig" -p 1,7 -w 2 \
	-c 0 -o "$TMP/k.jsonl"
expect_grep "^agree +001_allreduce W=2 bf16" "$TMP/out"
expect_grep "^\| 001_allreduce \| 2 \| bf16 \| agree \|" "$TMP/k.md"
expect_exit 0 python3 - "$TMP/k.jsonl" "$TMP/pids" <<'EOF'
import json, os, sys, time
assert [json.loads(l)["problem"] for l in open(sys.argv[1])] == ["001_allreduce"]
time.sleep(0.5)
for p in os.listdir(sys.argv[2]):
    try:
        os.kill(int(p), 0)
    except ProcessLookupError:
        continue
    raise AssertionError(f"rank process {p} outlived the killed run")
EOF
for p in $(ls "$TMP/pids"); do kill -9 "$p" 2>/dev/null; done
rm -f "$TMP/pids"/*

# a timing that never returns: a SIGTERM to crosscheck.py alone (a time
# limit, --foreground: not to its process group) ends the rank processes
# too, and their reports, written before the timing, keep the comparison
XC_PIDS=$TMP/pids PYTHONPATH=$XC expect_exit 124 timeout --foreground 8 python3 "$ROOT/tools/crosscheck.py" \
	--orig "$XC/orig" --ours "$TMP/saves/006" --out "$TMP/hang" --world 2 --time
expect_exit 0 python3 - "$TMP/hang" "$TMP/pids" <<'EOF'
import json, os, sys, time
d, pids = sys.argv[1:]
for r in range(2):
    j = json.load(open(os.path.join(d, f"rank_{r}_report.json")))
    assert j["status"] == "ok" and j["perf_error"].startswith("did not finish timing"), j
assert len(os.listdir(pids)) == 2, os.listdir(pids)
time.sleep(0.5)
for p in os.listdir(pids):
    try:
        os.kill(int(p), 0)
    except ProcessLookupError:
        continue
    raise AssertionError(f"rank process {p} outlived crosscheck.py")
EOF
for p in $(ls "$TMP/pids"); do kill -9 "$p" 2>/dev/null; done   # left behind: this test's own
expect_exit 0 "$PKB" compare "$TMP/saves/006" "$TMP/hang"
unset PKB_RANK_CMD PKB_TEST_GPUS PKB_FAKE_SAVE
expect_exit 1 python3 "$ROOT/tools/crosscheck.py" --orig "$TMP/notorig" --ours "$TMP/a" --out "$TMP/x" --world 2
expect_grep "is not a checkout of the original ParallelKernelBench" "$TMP/err"
done_testing
