"""
make_dumps.py: two runs' PyTorch DebugMode hash dumps, written as torch/utils/_debug_mode
writes them (harness/import/import_debugmode.c cites the source), of one small model's
step: an MLP (Net: fc1, relu, layer norm, fc2, sum) forward and backward, run under

    with DebugMode(record_nn_module=True) as dm, \\
            DebugMode.log_tensor_hashes(hash_fn=["norm", "hash_tensor"], hash_inputs=True):
        ...
    DebugMode.save_logs(dm.logs, "logs/run_a/0001.json")   # PR #185010
    dm.dump_tensor_hashes("hashes/run_a/rank_0.txt")       # PR #185008

so that each tensor's hash is the tuple (L1 norm in float64, torch.hash_tensor's uint64).
The norms and uint64s are made up from (op, step, rank), not computed; everything else is
laid out as the source lays it out:

- logs/RUN/0001.json, 0002.json: save_logs' {"format", "version": 1, "logs"} of steps 1
  and 2 of rank 0 (their names say no step: the n-th file is step n), each call as
  _serialize_debug_call writes it (call_depth, log, output_str, stack_trace,
  fwd_stack_trace, type, then op_name, args_str, kwargs_str, tensor_hash_leaves; an
  annotate's tag and header), each value as _serialize_debug_value writes it; json.dump
  with allow_nan=False, then a newline.
- hashes/RUN/rank_0.txt, rank_1.txt: dump_tensor_hashes of one step of ranks 0 and 1: the
  header line, 80 '=', a blank line, then per op with a hash its block ([MODULE/op_N_CALL],
  Call type, Call index, Call depth, Input hashes, Output hashes) and a blank line, the
  hashes json.dumps(..., allow_nan=False, sort_keys=True) of json_safe's.
- nn.Mod annotations at call_depth + 1 as _enter_nn_module_call records them, ops one
  deeper than the module they run in; the backward's ops in no module (an eager backward).
- The rstd output of aten::native_layer_norm has an infinite norm (a tensor of infs):
  {"type": "nonfinite_float", "value": "inf"} in the JSON, "Infinity" in the text.

Run b equals run a but for an aten::clone inserted after aten::relu (every step, rank), and
the uint64 of the output of the second aten::addmm (Net.fc2) changed, its norm left as it
was (a change the float64 norm does not see), at step 2 in logs/ and on rank 0 in hashes/.

    python3 make_dumps.py   (writes logs/ and hashes/ beside it)
"""
import json
import math
import os

HERE = os.path.dirname(os.path.abspath(__file__))
K = 0x9E3779B97F4A7C15

# (kind, depth, name, args_str, output_str, input paths, output paths); "mod" pushes a module
CALLS = [
    ("mod", 1, "Net"),
    ("mod", 2, "Net.fc1"),
    ("op", 3, "aten::t", "t$1: f32[16, 8]", "t$3: f32[8, 16]", ["[0][0]"], [""]),
    ("op", 3, "aten::addmm", "t$2: f32[16], t$0: f32[4, 8], t$3: f32[8, 16]", "t$4: f32[4, 16]",
     ["[0][0]", "[0][1]", "[0][2]"], [""]),
    ("op", 2, "aten::relu", "t$4: f32[4, 16]", "t$5: f32[4, 16]", ["[0][0]"], [""]),
    ("clone", 2, "aten::clone", "t$5: f32[4, 16]", "t$6: f32[4, 16]", ["[0][0]"], [""]),
    ("op", 2, "aten::native_layer_norm", "t$5: f32[4, 16], [16], None, None, 1e-05",
     "(t$7: f32[4, 16], t$8: f32[4, 1], t$9: f32[4, 1])", ["[0][0]"], ["[0]", "[1]", "[2]"]),
    ("mod", 2, "Net.fc2"),
    ("op", 3, "aten::t", "t$10: f32[4, 16]", "t$11: f32[16, 4]", ["[0][0]"], [""]),
    ("op", 3, "aten::addmm", "t$12: f32[4], t$7: f32[4, 16], t$11: f32[16, 4]", "t$13: f32[4, 4]",
     ["[0][0]", "[0][1]", "[0][2]"], [""]),
    ("op", 1, "aten::sum", "t$13: f32[4, 4]", "t$14: f32[]", ["[0][0]"], [""]),
    ("op", 1, "aten::ones_like", "t$14: f32[]", "t$15: f32[]", ["[0][0]"], [""]),
    ("op", 1, "aten::expand", "t$15: f32[], [4, 4]", "t$16: f32[4, 4]", ["[0][0]"], [""]),
    ("op", 1, "aten::mm", "t$16: f32[4, 4], t$10: f32[4, 16]", "t$17: f32[4, 16]",
     ["[0][0]", "[0][1]"], [""]),
    ("op", 1, "aten::threshold_backward", "t$17: f32[4, 16], t$5: f32[4, 16], 0",
     "t$18: f32[4, 16]", ["[0][0]", "[0][1]"], [""]),
    ("op", 1, "aten::sum", "t$18: f32[4, 16], [0], True", "t$19: f32[1, 16]", ["[0][0]"], [""]),
]


def hash_of(k, step, rank, changed):
    """(norm, uint64) of tensor k (its call's index in CALLS * 10, + 5 + i for its i-th
    input, + i for its i-th output of several) at (step, rank)."""
    norm = 10.0 + 1.25 * k + 0.5 * step + 0.125 * rank
    h = (K * (k + 1) + step * 1000 + rank) % 2**64
    if k == 62:  # the layer norm's rstd: a tensor of infs
        norm = math.inf
    return (norm, h ^ 1 if changed else h)


def ser(v):
    """_serialize_debug_value."""
    if v is None or isinstance(v, (bool, int, str)):
        return {"type": "scalar", "value": v}
    if isinstance(v, float):
        if math.isnan(v):
            return {"type": "nonfinite_float", "value": "nan"}
        if math.isinf(v):
            return {"type": "nonfinite_float", "value": "inf" if v > 0 else "-inf"}
        return {"type": "scalar", "value": v}
    if isinstance(v, tuple):
        return {"type": "tuple", "items": [ser(i) for i in v]}
    if isinstance(v, list):
        return {"type": "list", "items": [ser(i) for i in v]}
    return {"type": "dict", "items": [[k, ser(i)] for k, i in v.items()]}


def json_safe(v):
    if isinstance(v, float) and not math.isfinite(v):
        return "NaN" if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity")
    if isinstance(v, (list, tuple)):
        return [json_safe(i) for i in v]
    return v


def calls(step, rank, plant, change_at):
    """The run's calls: (index, kind, depth, name, args, out, leaves {"input": [(path, hash)],
    "output": [...]}) in order."""
    out, addmm = [], 0
    for c in CALLS:
        if c[0] == "mod":
            out.append(("mod", c[1], c[2]))
            continue
        if c[0] == "clone" and not plant:
            continue
        _, depth, name, args, res, ins, outs = c
        k = 10 * CALLS.index(c)
        addmm += name == "aten::addmm"
        changed = plant and change_at and name == "aten::addmm" and addmm == 2
        leaves = {"input": [(p, hash_of(k + 5 + i, step, rank, False)) for i, p in enumerate(ins)],
                  "output": [(p, hash_of(k + i if len(outs) > 1 else k, step, rank, changed))
                             for i, p in enumerate(outs)]}
        out.append(("op", depth, name, args, res, leaves))
    return out


def tree(leaves, outputs):
    """The hash trees log_tensor_hashes leaves in call.log."""
    if not outputs:
        return (tuple(h for _, h in leaves), {})
    if len(leaves) == 1 and leaves[0][0] == "":
        return leaves[0][1]
    return tuple(h for _, h in leaves)


def save_logs(path, cs):
    logs = []
    for c in cs:
        common = {"call_depth": c[1], "log": None, "output_str": None, "stack_trace": None,
                  "fwd_stack_trace": None}
        if c[0] == "mod":
            common.update({"type": "annotate", "tag": c[2], "header": "nn.Mod"})
        else:
            _, depth, name, args, res, leaves = c
            common["log"] = ser({"input_hash": tree(leaves["input"], False),
                                 "hash": tree(leaves["output"], True)})
            common["output_str"] = "  ->  " + res
            common.update({"type": "op", "op_name": name, "args_str": args, "kwargs_str": "",
                           "tensor_hash_leaves": ser({k: list(v) for k, v in leaves.items()})})
        logs.append(common)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"format": "torch.utils._debug_mode.DebugMode.logs", "version": 1,
                   "logs": logs}, f, allow_nan=False)
        f.write("\n")


def dump_tensor_hashes(path, cs):
    def fmt(entries):
        return ", ".join("%s=%s" % (p or "<root>", json.dumps(json_safe(h), allow_nan=False,
                                                            sort_keys=True))
                         for p, h in entries)

    blocks, stack, counters = [], [], {}
    for i, c in enumerate(cs):
        while stack and stack[-1][0] >= c[1]:
            stack.pop()
        module = stack[-1][1] if stack else "<none>"
        if c[0] == "mod":
            stack.append((c[1], c[2]))
            continue
        n = counters.get(module, 0)
        counters[module] = n + 1
        blocks.append("[%s/op_%d_%s]\n  Call type: torch op\n  Call index: %d\n"
                      "  Call depth: %d\n  Input hashes: %s\n  Output hashes: %s\n\n"
                      % (module, n, c[2], i, c[1], fmt(c[5]["input"]), fmt(c[5]["output"])))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write("Total captured tensor hash ops: %d\n" % len(blocks))
        f.write("=" * 80 + "\n\n")
        f.write("".join(blocks))


for run, plant in (("run_a", False), ("run_b", True)):
    for step in (1, 2):
        save_logs(os.path.join(HERE, "logs", run, "%04d.json" % step),
                  calls(step, 0, plant, step == 2))
    for rank in (0, 1):
        dump_tensor_hashes(os.path.join(HERE, "hashes", run, "rank_%d.txt" % rank),
                           calls(1, rank, plant, rank == 0))
