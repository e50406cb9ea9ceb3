"""
test_trace_torch.py: lockstep-trace's Python module on a PyTorch model (CPU), the way a
training loop uses it: trace_module on a 3-layer MLP trained 6 steps with SGD on fixed data,
traced into runs "clean", "clean2", "nan" and "nangrad". In "nan" a forward hook writes NaN
into one element of the middle Linear's output at step 3; in "nangrad" the same layer's
weight gradient gets a NaN at step 3, after the backward: the loss shows it only at step 4,
and the trace names step 3 and 2.weight as the optimizer left it. 'lockstep diff' must call clean and clean2
identical, and name step 3, rank 0, tensor 2.output (forward) as the first divergence of
clean and nan, where the loss (printed) only says that step 3's loss is NaN, not where it
began. The records are the module outputs, output gradients and parameters after the
optimizer, and their statistics are those of the tensors, bit for bit (test_trace_py.py's
definition). Also: bfloat16, float16, float64, integer and strided tensors measure as their
float32 values, and so does a tensor with torch's negative bit set (its memory holds the
negated values); a tuple output is named per element; tracer.micro marks microbatches; a
forward recomputed by activation checkpointing is phase "recompute"; an output key holding
NUL is refused, naming the module; a complex tensor measures as its parts interleaved
(view_as_real), autograd's ZeroTensor as its zeros, and a model whose modules output a
complex and a meta tensor trains traced, the meta one left out. And two processes of a
DistributedDataParallel job (gloo) tracing one run, their parameters alike after each step.

    python test_trace_torch.py LOCKSTEP_BIN LIB_PATH TMPDIR

Exit status: 0 passed, 77 skipped (no torch or no numpy), 1 failed.
"""

import math
import os
import sys
import warnings

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import test_trace_py as tp  # noqa: E402  (the helpers; it puts lockstep_trace on the path)

CASE = "torchtrace"
STEPS = 6
PLANT_STEP = 3


def fresh(path):
    for f in (path, path + "-wal", path + "-shm"):
        if os.path.exists(f):
            os.remove(f)
    return path


def train(torch, lt, lib, db, run_name, plant=False, keep=None, plant_grad=False):
    """Trains the MLP STEPS steps traced into CASE/run_name; returns the losses. plant: NaN
    into 2.output[0, 0] at PLANT_STEP. plant_grad: NaN into 2.weight's gradient at
    PLANT_STEP, after the backward and before the optimizer (a faulty device's gradient):
    that step's loss was computed before it, so the loss shows it a step later. keep: a
    dict given (step, name) -> tensor of the records this checks by value."""
    nn = torch.nn
    torch.manual_seed(0)
    x = torch.randn(32, 8)
    y = torch.randn(32, 4)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU(),
                          nn.Linear(16, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    state = {"step": 0}
    if plant:
        def nan_hook(module, args, out):  # before the tracer's hook: it sees the NaN
            if state["step"] == PLANT_STEP:
                out = out.clone()
                out[0, 0] = float("nan")
                return out
        model[2].register_forward_hook(nan_hook)
    if keep is not None:
        model[4].register_forward_hook(
            lambda m, a, out: keep.__setitem__((state["step"], "4.output"), out.detach().clone()))
    tracer = lt.trace_module(model, db, case=CASE, run=run_name, parameters=True, lib=lib)
    losses = []
    for step in range(STEPS):
        state["step"] = step
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        if plant_grad and step == PLANT_STEP:
            with torch.no_grad():
                model[2].weight.grad[0, 0] = float("nan")
        opt.step()
        tracer.step(step)
        losses.append(loss.item())
        if keep is not None:
            keep[(step, "0.weight")] = model[0].weight.detach().clone()
            keep[(step, "4.bias")] = model[4].bias.detach().clone()
    tracer.close()
    return losses


def check_mlp(c, torch, np, xxhash, lt, lib, lockstep, tmp):
    db = fresh(os.path.join(tmp, "trace_torch.db"))
    keep = {}
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        clean = train(torch, lt, lib, db, "clean", keep=keep)
    hooks = [str(w.message) for w in said if "hook" in str(w.message)]
    c.ok(not hooks, "tracing warns of no hook (the first Linear's input needs no gradient)",
         "; ".join(hooks))
    train(torch, lt, lib, db, "clean2")
    nan = train(torch, lt, lib, db, "nan", plant=True)
    print("step  loss clean              loss nan")
    for s in range(STEPS):
        print("%4d  %-22r  %r" % (s, clean[s], nan[s]))
    bad = [s for s in range(STEPS) if not math.isfinite(nan[s])]
    print("the loss: first non-finite at step %s, with no word of where"
          % (bad[0] if bad else "none"))
    c.ok(all(math.isfinite(v) for v in clean) and (not bad or bad[0] >= PLANT_STEP),
         "the loss is finite before step %d" % PLANT_STEP, repr(nan))

    recs = tp.export(lockstep, db, "clean", case=CASE)
    if not c.ok(recs is not None, "export of %s/clean" % CASE):
        return
    s0 = [(o["phase"], o["tensor"]) for o in recs if o["step"] == 0]
    fwd = [n for p, n in s0 if p == "forward"]
    c.ok(fwd == ["0.output", "1.output", "2.output", "3.output", "4.output", "output"],
         "forward records: each module's output in execution order, the model's last", repr(fwd))
    bwd = sorted(n for p, n in s0 if p == "backward")
    c.ok(bwd == sorted(["grad_output"] + ["%d.grad_output" % i for i in range(5)]),
         "backward records: each module's output gradient", repr(bwd))
    upd = [n for p, n in s0 if p == "update"]
    c.ok(upd == ["0.weight", "0.bias", "2.weight", "2.bias", "4.weight", "4.bias"],
         "update records: each parameter after the optimizer", repr(upd))
    c.ok(sorted(set(o["step"] for o in recs)) == list(range(STEPS))
         and all(o["rank"] == 0 and "micro" not in o for o in recs),
         "steps 0..%d, rank 0 (no RANK in the environment), no microbatch" % (STEPS - 1))
    by = dict(((o["step"], o["tensor"]), o) for o in recs if o["phase"] != "backward")
    for (step, name), t in sorted(keep.items()):
        tp.check_stats(c, np, xxhash, by[(step, name)], t.numpy(),
                       "step %d %s" % (step, name))

    rc, out = tp.run([lockstep, "diff", "%s/clean" % CASE, "%s/clean2" % CASE, "--db", db])
    c.ok(rc == 0, "lockstep diff clean clean2: identical (exit 0)", "exit %d\n%s" % (rc, out))
    rc, out = tp.run([lockstep, "diff", "%s/clean" % CASE, "%s/nan" % CASE, "--db", db])
    first = tp.first_divergence(out)
    print(first)
    c.ok(rc == 1, "lockstep diff clean nan: differ (exit 1)", "exit %d\n%s" % (rc, out))
    c.ok(first.startswith("first divergence: step %d," % PLANT_STEP) and "rank 0" in first
         and "'2.output' (forward)" in first,
         "the first divergence is step %d, rank 0, 2.output (forward)" % PLANT_STEP,
         repr(first) + "\n" + out)

    # a NaN in one layer's gradient: the step's loss is finite, the next one's is not; the
    # trace names the step and the layer's weight as the optimizer left it
    grad = train(torch, lt, lib, db, "nangrad", plant_grad=True)
    bad = [s for s in range(STEPS) if not math.isfinite(grad[s])]
    print("a NaN in 2.weight's gradient at step %d: the loss first non-finite at step %s"
          % (PLANT_STEP, bad[0] if bad else "none"))
    c.ok(bad and bad[0] == PLANT_STEP + 1, "the loss sees the gradient's NaN a step later",
         repr(grad))
    rc, out = tp.run([lockstep, "diff", "%s/clean" % CASE, "%s/nangrad" % CASE, "--db", db])
    first = tp.first_divergence(out)
    print(first)
    c.ok(rc == 1 and first.startswith("first divergence: step %d," % PLANT_STEP)
         and "rank 0" in first and "'2.weight' (update)" in first,
         "the trace names step %d, rank 0, 2.weight (update)" % PLANT_STEP,
         repr(first) + "\n" + out)


def check_dtypes(c, torch, np, xxhash, lt, lib, lockstep, tmp):
    """Each kind of tensor beside its float32 values: the same statistics and hash."""
    db = fresh(os.path.join(tmp, "trace_torch_dtypes.db"))
    g = torch.Generator().manual_seed(7)
    base = torch.randn(5, 41, generator=g) * 50
    base[1, 2] = float("nan")
    base[3, 4] = float("inf")
    kinds = [
        ("bf16", base.to(torch.bfloat16)),
        ("f16", base.to(torch.float16)),
        ("f64", base.to(torch.float64)),
        ("i32", (base.nan_to_num(0, 0, 0) * 3).to(torch.int32)),
        ("strided", base.t()),
        ("grad", base.clone().requires_grad_(True)),
        ("empty.bf16", torch.zeros(0, 3, dtype=torch.bfloat16)),
        ("scalar", torch.tensor(2.5)),
        ("sparse", base.nan_to_num(0, 0, 0).to_sparse()),  # measured as its dense values
        # torch's negative bit: a contiguous view whose memory holds the negation of its
        # values (the imaginary part of a conjugate, contiguous with one element; _neg_view),
        # measured as its values
        ("neg.conj_imag", torch.complex(base[0, :1], base[1, :1]).conj().imag),
        ("neg.view", torch._neg_view(base[2])),
        # complex: the real and imaginary parts interleaved (view_as_real), a conjugate's
        # imaginary parts negated; complex128's parts converted to float32
        ("complex", torch.complex(base[0], base[1]).conj()),
        ("complex128", torch.complex(base[2], base[3]).to(torch.complex128).t()),
        ("zerotensor", torch._efficientzerotensor(5, 3)),  # autograd's zeros, no memory
    ]

    def f32(x):
        """x's values as a plain float32 tensor, each step written out."""
        x = x.detach()
        if x.layout != torch.strided:
            x = x.to_dense()
        if x._is_zerotensor():
            x = torch.zeros(x.shape)
        x = x.resolve_conj().resolve_neg()
        if x.is_complex():
            x = torch.view_as_real(x)
        return x.to(torch.float32).contiguous()
    with lt.Trace(db, CASE, "dtypes", lib=lib) as t:
        for name, x in kinds:
            t.tensor(name, x)
            t.tensor(name + ".as_f32", f32(x))
        try:  # a shape with no values
            t.tensor("meta", torch.empty(3, device="meta"))
            c.ok(False, "a meta tensor refused")
        except TypeError as e:
            c.ok("meta" in str(e) and "wraps" not in str(e), "a meta tensor refused, said "
                 "to be one", str(e))
        t.step(0)
    recs = tp.export(lockstep, db, "dtypes", case=CASE)
    if not c.ok(recs is not None and len(recs) == 2 * len(kinds),
                "export of %s/dtypes: %d records" % (CASE, 2 * len(kinds))):
        return
    for i, (name, x) in enumerate(kinds):
        a, b = recs[2 * i], recs[2 * i + 1]
        same = all(tp.same_float(a[k], b[k]) for k in ("l2", "amax", "nonfinite")) \
            and a["hash"] == b["hash"]
        c.ok(a["tensor"] == name and same, "%s measures as its float32 values" % name,
             "%r\n%r" % (a, b))
        tp.check_stats(c, np, xxhash, a, f32(x).numpy(), name)


def check_micro_recompute(c, torch, lt, lib, lockstep, tmp):
    """Two microbatches a step, a tuple output, and a block under activation checkpointing:
    its forward runs again in the backward pass, as phase "recompute", the same values."""
    from torch.utils.checkpoint import checkpoint, set_checkpoint_early_stop
    nn = torch.nn

    class Halves(nn.Module):
        def forward(self, h):
            return h[:, :8], h[:, 8:]

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.block = nn.Sequential(nn.Linear(8, 16), nn.Tanh())
            self.halves = Halves()
            self.head = nn.Linear(8, 2)

        def forward(self, x):
            h = checkpoint(self.block, x, use_reentrant=False)
            a, b = self.halves(h)
            return self.head(a * b)

    db = fresh(os.path.join(tmp, "trace_torch_micro.db"))
    torch.manual_seed(1)
    net = Net()
    x = torch.randn(2, 4, 8)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    tracer = lt.trace_module(net, db, case=CASE, run="micro", gradients=False, lib=lib)
    with set_checkpoint_early_stop(False):  # the whole block again, not only what is saved
        for step in range(2):
            opt.zero_grad()
            for m in range(2):
                tracer.micro = m
                net(x[m]).square().mean().backward()
            opt.step()
            tracer.step(step)
    tracer.close()
    recs = tp.export(lockstep, db, "micro", case=CASE)
    if not c.ok(recs is not None, "export of %s/micro" % CASE):
        return
    s1 = [(o.get("micro"), o["phase"], o["tensor"]) for o in recs if o["step"] == 1]
    want = []
    for m in range(2):
        want += [(m, "forward", n) for n in ("block.0.output", "block.1.output",
                                             "block.output", "halves.output.0",
                                             "halves.output.1", "head.output", "output")]
        want += [(m, "recompute", n) for n in ("block.0.output", "block.1.output",
                                               "block.output")]
    c.ok(s1 == want, "microbatches, tuple outputs and recomputed forwards named and ordered",
         "%r" % s1)
    by = {}
    for o in recs:
        by.setdefault((o["step"], o.get("micro"), o["tensor"]), {})[o["phase"]] = o["hash"]
    same = [h["forward"] == h["recompute"] for k, h in by.items() if "recompute" in h]
    c.ok(len(same) == 12 and all(same), "a recomputed output has its forward's hash")


def check_nul_key(c, torch, lt, lib, tmp):
    """A module whose output dict has a key holding NUL: a tensor name the C library would
    cut there (spec.output.a and spec.output.a\0hidden both stored as spec.output.a), so
    trace_module refuses it with ValueError naming the module."""
    nn = torch.nn

    class Pair(nn.Module):
        def forward(self, x):
            return {"a": x, "a\0hidden": -x}

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.pair = Pair()

        def forward(self, x):
            return self.pair(x)["a"].sum()

    db = fresh(os.path.join(tmp, "trace_torch_nul.db"))
    tracer = lt.trace_module(Net(), db, case=CASE, run="nul", gradients=False, lib=lib)
    try:
        tracer.model(torch.ones(3))
        c.ok(False, "an output key holding NUL refused")
    except ValueError as e:
        c.ok("module 'pair'" in str(e) and "NUL" in str(e), "an output key holding NUL "
             "refused, naming the module", str(e))
    tracer.close()


def check_complex_meta(c, torch, np, xxhash, lt, lib, lockstep, tmp):
    """A model that trains untraced trains traced: one whose module outputs a complex tensor
    (torch.fft.rfft), its output and output gradient measured as view_as_real (the parts
    interleaved), and one whose module outputs a meta tensor (a shape probe), which has no
    values and is left out."""
    nn = torch.nn

    class Spec(nn.Module):
        def forward(self, x):
            return torch.fft.rfft(x, dim=-1)

    class Probe(nn.Module):  # the shape of what comes next, without computing it
        def forward(self, x):
            return torch.empty(x.shape[:-1] + (1,), device="meta")

    class FNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.pre, self.spec, self.probe = nn.Linear(8, 8), Spec(), Probe()
            self.lin = nn.Linear(5, 1)

        def forward(self, x):  # pre: a gradient flows back through spec
            assert self.probe(x).shape == (2, 1)
            return self.lin(self.spec(self.pre(x)).real).sum()

    db = fresh(os.path.join(tmp, "trace_torch_complex.db"))
    torch.manual_seed(3)
    net = FNet()
    x = torch.randn(2, 8)
    keep = {}
    net.spec.register_forward_hook(lambda m, a, out: keep.__setitem__("out", out.detach()))
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    tracer = lt.trace_module(net, db, case=CASE, run="complex", lib=lib)
    try:
        for step in range(2):
            opt.zero_grad()
            net(x).backward()
            opt.step()
            tracer.step(step)
        c.ok(True, "a model with a complex and a meta module output trains traced")
    except Exception as e:
        c.ok(False, "a model with a complex and a meta module output trains traced",
             "%s: %s" % (type(e).__name__, e))
        return
    finally:
        tracer.close()
    recs = tp.export(lockstep, db, "complex", case=CASE)
    if not c.ok(recs is not None, "export of %s/complex" % CASE):
        return
    names = [(o["phase"], o["tensor"]) for o in recs if o["step"] == 1]
    c.ok(("forward", "spec.output") in names and ("backward", "spec.grad_output") in names
         and not any("probe" in n for _, n in names), "the complex output and its gradient "
         "recorded, the meta one left out", "%r" % names)
    out = [o for o in recs if o["step"] == 1 and o["tensor"] == "spec.output"]
    if out:
        tp.check_stats(c, np, xxhash, out[0], torch.view_as_real(keep["out"]).numpy(),
                       "spec.output (complex) as view_as_real")


def _fully_shard(torch):
    """FSDP2's fully_shard, or None where this torch has none (before 2.4)."""
    try:
        from torch.distributed.fsdp import fully_shard
    except ImportError:
        try:
            from torch.distributed._composable.fsdp import fully_shard
        except ImportError:
            return None
    return fully_shard


def dist_rank(rank, db, lib, port, kind):
    """Rank `rank` of 2 (torch.multiprocessing.spawn's) on the CPU over gloo, each rank its
    own batch, traced into CASE/<kind> with parameters: kind "ddp" DistributedDataParallel;
    "fsdp" FSDP2 (fully_shard on each Linear and the model), its parameters DTensors traced
    as this rank's shards; "fsdp_whole" the same traced whole (whole=True); "tp" tensor
    parallelism (the first Linear column-wise, the second row-wise, one batch for both
    ranks), "tp_whole" the same traced whole."""
    import torch
    import torch.distributed as dist

    import lockstep_trace as lt

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=2)
    torch.manual_seed(0)
    nn = torch.nn
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    if kind == "ddp":
        wrapped = nn.parallel.DistributedDataParallel(model)
    elif kind.startswith("tp"):
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.tensor.parallel import (ColwiseParallel, RowwiseParallel,
                                                       parallelize_module)

        parallelize_module(model, init_device_mesh("cpu", (2,)),
                           {"0": ColwiseParallel(), "2": RowwiseParallel()})
        wrapped = model
    else:
        from torch.distributed.device_mesh import init_device_mesh

        if kind.startswith("fsdp_fp8"):  # torchtitan's FP8: torchao's, gathered in FP8
            from torchao.float8 import Float8LinearConfig, convert_to_float8_training

            model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 16))
            convert_to_float8_training(model, config=Float8LinearConfig(
                enable_fsdp_float8_all_gather=True))
        mesh = init_device_mesh("cpu", (2,))
        fully_shard = _fully_shard(torch)
        for m in (model[0], model[2], model):
            fully_shard(m, mesh=mesh)
        wrapped = model
    opt = torch.optim.SGD(wrapped.parameters(), lr=0.05)
    tracer = lt.trace_module(model, db, case=CASE, run=kind, rank=rank, world_size=2,
                             parameters=True, lib=lib, whole=kind.endswith("_whole"))
    g = torch.Generator().manual_seed(0 if kind.startswith("tp") else rank)
    x, y = torch.randn(16, 8, generator=g), torch.randn(16, 4, generator=g)
    for step in range(3):
        opt.zero_grad()
        ((wrapped(x)[:, :4] - y) ** 2).mean().backward()
        opt.step()
        tracer.step(step)
    tracer.close()
    dist.destroy_process_group()


def _spawn(db, lib, kind):
    import socket

    import torch.multiprocessing as mp

    with socket.socket() as so:
        so.bind(("127.0.0.1", 0))
        port = so.getsockname()[1]
    mp.spawn(dist_rank, args=(db, lib, port, kind), nprocs=2, join=True)


def _hashes(lockstep, db, run):
    """{(step, phase, tensor): {rank: hash}} of run, or None."""
    recs = tp.export(lockstep, db, run, case=CASE)
    if recs is None:
        return None
    by = {}
    for o in recs:
        by.setdefault((o["step"], o["phase"], o["tensor"]), {})[o.get("rank", 0)] = o["hash"]
    return by


def check_ddp(c, torch, lib, lockstep, tmp):
    """Two processes of a DistributedDataParallel job (gloo, the CPU) trace one run into
    one database, as torchrun's ranks do: one run of world size 2, each rank's records;
    the parameters after each step alike on both ranks, bit for bit (DDP's all-reduce), the
    activations of their different batches not. Then the same training under FSDP2, whose
    parameters are DTensors: traced as each rank's shard, every record but the parameters
    is DDP's bit for bit (the same forward on the gathered weights, and with 2 ranks the
    mean of two gradients is exact whatever the order); traced whole, every record is."""
    db = fresh(os.path.join(tmp, "trace_ddp.db"))
    _spawn(db, lib, "ddp")
    by = _hashes(lockstep, db, "ddp")
    if not c.ok(by is not None, "export of %s/ddp" % CASE):
        return
    c.ok({r for k in by for r in by[k]} == {0, 1}, "both ranks' records in one run")
    upd = [h for (step, ph, t), h in by.items() if ph == "update"]
    c.ok(len(upd) == 3 * 4 and all(len(h) == 2 and h[0] == h[1] for h in upd),
         "the parameters after each step alike on both ranks, bit for bit", "%r" % upd[:2])
    fwd = by.get((0, "forward", "0.output"), {})
    c.ok(len(fwd) == 2 and fwd[0] != fwd[1], "the ranks' own batches: activations differ")
    if _fully_shard(torch) is None:
        print("skipped: FSDP2 (this torch has no fully_shard)")
        return
    pair = _layouts(c, db, lib, lockstep, "fsdp")
    if not pair:
        return
    shard, whole = pair
    c.ok(set(shard) == set(by) and set(whole) == set(by), "FSDP2's tensors are DDP's, by "
         "name, phase and step", "%r" % sorted(set(by) ^ set(shard))[:4])
    same = [k for k in by if shard.get(k) == by[k]]
    c.ok(sorted(same) == sorted(k for k in by if k[1] != "update"),
         "FSDP2 traced as shards: every activation and gradient is DDP's, bit for bit, "
         "and no parameter (a shard is not the whole)",
         "%r" % sorted(k for k in by if (k in same) != (k[1] != "update"))[:4])
    c.ok(all(whole.get(k) == by[k] for k in by), "FSDP2 traced whole: every record is "
         "DDP's, parameters too, bit for bit",
         "%r" % [k for k in by if whole.get(k) != by[k]][:4])
    # tensor parallelism: the row-wise layer's output is functional collectives'
    # AsyncCollectiveTensor, which has no memory until waited for (the trace took it for
    # no data); its weights are shards unless traced whole
    pair = _layouts(c, db, lib, lockstep, "tp")
    if not pair:
        return
    out = pair[0].get((0, "forward", "2.output"), {})
    c.ok(len(out) == 2 and out[0] == out[1], "the row-wise layer's output (waited for) is "
         "the group's sum, alike on both ranks")
    _first_weight(c, pair, "a column-wise weight")
    # torchtitan's FP8 under FSDP2: torchao's float8 training with the all-gather in FP8,
    # whose weight's local shard is a wrapper (WeightWithDynamicFloat8CastTensor)
    try:
        import torchao.float8  # noqa: F401
    except ImportError:
        print("skipped: FSDP2 with torchao's float8 (torchao is not installed)")
        return
    pair = _layouts(c, db, lib, lockstep, "fsdp_fp8")
    if not pair:
        return
    c.ok(set(pair[0]) == set(pair[1]) and len(pair[0]) == 3 * (4 + 4 + 4), "FSDP2 with "
         "torchao's float8: every module's output, gradient and parameter traced",
         "%d" % len(pair[0]))
    _first_weight(c, pair, "its float8 weight")


def _layouts(c, db, lib, lockstep, kind):
    """kind and kind_whole trained and traced (dist_rank): their records (_hashes), or None
    where one did not export."""
    _spawn(db, lib, kind)
    _spawn(db, lib, kind + "_whole")
    pair = _hashes(lockstep, db, kind), _hashes(lockstep, db, kind + "_whole")
    if not c.ok(None not in pair, "export of %s/%s and %s_whole" % (CASE, kind, kind)):
        return None
    return pair


def _first_weight(c, pair, what):
    """The first layer's weight after each step, of the runs traced as shards and whole:
    each rank's own rows as shards, the same weight on both ranks whole."""
    shards = [pair[0].get((s, "update", "0.weight"), {}) for s in range(3)]
    wholes = [pair[1].get((s, "update", "0.weight"), {}) for s in range(3)]
    c.ok(all(len(h) == 2 and h[0] != h[1] for h in shards), "%s traced as shards: each "
         "rank's own rows" % what)
    c.ok(all(len(h) == 2 and h[0] == h[1] for h in wholes), "%s traced whole: the same on "
         "both ranks, bit for bit" % what)


def main(argv):
    lockstep, lib, tmp = tp.usage(argv, "test_trace_torch.py")
    try:
        import numpy as np
    except ImportError:
        print("skipped: numpy is not installed")
        return tp.SKIP
    try:
        import torch
    except ImportError:
        print("skipped: torch is not installed")
        return tp.SKIP
    try:
        import xxhash
    except ImportError:
        xxhash = None
        print("skipped: hashes against XXH3-64 (the Python package xxhash is not installed)")
    import lockstep_trace as lt

    for v in ("RANK", "WORLD_SIZE"):
        os.environ.pop(v, None)
    torch.use_deterministic_algorithms(True)
    c = tp.Checks("test_trace_torch")
    check_mlp(c, torch, np, xxhash, lt, lib, lockstep, tmp)
    check_dtypes(c, torch, np, xxhash, lt, lib, lockstep, tmp)
    check_micro_recompute(c, torch, lt, lib, lockstep, tmp)
    check_nul_key(c, torch, lt, lib, tmp)
    check_complex_meta(c, torch, np, xxhash, lt, lib, lockstep, tmp)
    check_ddp(c, torch, lib, lockstep, tmp)
    return c.finish()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
