"""
make_fixtures.py: two runs' PyTorch DebugMode string dumps with tensor hashes, as
torch/utils/_debug_mode.py renders them (harness/import/import_debugmode.c cites it): one
op a line, indented two blanks a call depth, "{op}({args})  ->  {output}  # {log}", the log
the dict log_tensor_hashes(hash_fn=["norm", "hash_tensor"]) leaves, {'hash': (L1 norm,
uint64)} per output; a folder per step (step_1, step_2), a file per rank. Run b equals run a
but: an aten::add inserted after the first aten::mm of every step, and the hash of the
second aten::mm (its L1 norm and its uint64) changed at step 2 on rank 1.

    python3 make_fixtures.py   (writes run_a/ and run_b/ beside it)
"""
import os

HERE = os.path.dirname(os.path.abspath(__file__))
OPS = [  # (depth, op, args, output, hashed)
    (0, "torch._C._nn.linear", "t$0: f32[4, 8], t$1: f32[16, 8]", "t$2: f32[4, 16]", False),
    (1, "aten::t", "t$1: f32[16, 8]", "t$3: f32[8, 16]", True),
    (1, "aten::mm", "t$0: f32[4, 8], t$3: f32[8, 16]", "t$2: f32[4, 16]", True),
    (0, "aten::relu", "t$2: f32[4, 16]", "t$4: f32[4, 16]", True),
    (0, "aten::mm", "t$4: f32[4, 16], t$5: f32[16, 4]", "t$6: f32[4, 4]", True),
    (0, "aten::sum", "t$6: f32[4, 4]", "t$7: f32[]", True),
]


def line(depth, op, args, out, log):
    s = "  " * depth + "%s(%s)  ->  %s" % (op, args, out)
    if log is not None:
        s += "  # %s" % (log,)
    return s + "\n"


def write(run, plant):
    for step in (1, 2):
        d = os.path.join(HERE, run, "step_%d" % step)
        os.makedirs(d, exist_ok=True)
        for rank in (0, 1):
            with open(os.path.join(d, "rank_%d.txt" % rank), "w") as f:
                mm = 0
                for k, (depth, op, args, out, hashed) in enumerate(OPS):
                    norm = 10.0 + 1.25 * k + 0.5 * step + 0.125 * rank
                    h = (0x9E3779B97F4A7C15 * (k + 1) + step * 1000 + rank) % 2**64
                    if op == "aten::mm":
                        mm += 1
                        if plant and mm == 2 and step == 2 and rank == 1:
                            norm += 2**-20
                            h ^= 1
                    f.write(line(depth, op, args, out, {"hash": (norm, h)} if hashed else None))
                    if plant and op == "aten::mm" and mm == 1:
                        f.write(line(1, "aten::add", "t$2: f32[4, 16], 0.5", "t$8: f32[4, 16]",
                                     {"hash": (3.5, 77)}))
                f.write(line(0, "redistribute_input", "t$6: f32[4, 4], trace: S(0)->R", "t$9: f32[4, 4]", None))


write("run_a", False)
write("run_b", True)
