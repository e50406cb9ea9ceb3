# gen.py: writes the titan-numerics fixtures beside it (python3 gen.py; plain Python, no
# torch; the tests read its output, committed, and do not run it). Each file is what
# torchtitan's dump_captures_to_file writes (pytorch/torchtitan b5bcd76c,
# agent_tooling/numerics_debugging/activation_tracer.py; --profiler.dump_numerics), its
# lines copied here; the captures are made up, each value derived from (step, rank, op).
#
# Two runs, a and b, of 2 ranks x 3 steps: {run}/step_{s}/rank_{r}_activations.log (the
# dump does not name its step: the folder does). Run b differs from a in the L2 norm of
# layers.0.feed_forward.w1/op_0_mm at step 2, rank 1, and has one module inserted before
# it, layers.0.feed_forward.gate_norm, at every step and rank.
import os

OPS = [  # key, phase, has stats
    ("tok_embeddings/op_0_embedding", "forward", True),
    ("layers.0.attention.wq/op_0_mm", "forward", True),
    ("layers.0.attention/op_0__scaled_dot_product_flash_attention", "forward", True),
    ("layers.0.feed_forward.w1/op_0_mm", "forward", True),
    ("layers.0.feed_forward.w2/op_0_mm", "forward", True),
    ("layers.0.feed_forward.w1/op_1_mm", "backward", True),
    ("<none>/op_0__fused_adam_", "forward", False),
]
INSERTED = "layers.0.feed_forward.gate_norm/op_0_rms_norm"
CHANGED = (2, 1, "layers.0.feed_forward.w1/op_0_mm")


class _StackFrame:
    def __init__(self, filename, lineno):
        self.filename, self.lineno = filename, lineno

    def short_str(self):
        parts = self.filename.replace("\\", "/").split("/")
        short_path = "/".join(parts[-2:]) if len(parts) >= 2 else self.filename
        return f"{short_path}:{self.lineno}"


class Cap:
    def __init__(self, stats, phase, output_hash, input_hashes, producers, frames):
        self.stats, self.phase = stats, phase
        self.output_hash, self.input_hashes = output_hash, input_hashes
        self.input_producers, self.stack_frames = producers, frames


def _clean_fqn(fqn):
    return fqn.replace("._checkpoint_wrapped_module", "")


# torchtitan's, as it is
def dump_captures_to_file(captures, filepath, *, skipped_excluded_ops=None):
    os.makedirs(os.path.dirname(filepath), exist_ok=True)
    with open(filepath, "w") as f:
        f.write(f"Total captured activations: {len(captures)}\n")
        if skipped_excluded_ops is not None:
            ops_str = ", ".join(sorted(skipped_excluded_ops)) or "(none)"
            f.write(f"Excluded ops dispatched: {ops_str}\n")
        f.write("=" * 80 + "\n\n")
        for key, cap in captures.items():
            f.write(f"[{_clean_fqn(key)}]\n")
            if cap.stats:
                for stat in ("Shape", "L1 norm", "L2 norm", "Min", "Max", "Mean"):
                    val = cap.stats.get(stat)
                    if val is not None:
                        f.write(f"  {stat}: {val}\n")
            if cap.output_hash:
                f.write(f"  Output hash: {cap.output_hash}\n")
            if cap.input_hashes:
                f.write(f"  Input hashes: {cap.input_hashes}\n")
            if cap.input_producers:
                f.write(f"  Input producers: {cap.input_producers}\n")
            if cap.stack_frames:
                f.write(f"  Location: {cap.stack_frames[-1].short_str()}\n")
            if cap.phase != "forward":
                f.write(f"  Phase: {cap.phase}\n")
            f.write("\n")


def l2_of(step, rank, i):
    return 10.0 + step + 0.5 * rank + 0.03125 * i + 1e-7 * (i + 1) * (rank + 2)


def capture(step, rank, i, key, phase, has_stats, l2):
    stats = {}
    if has_stats:
        # _compute_stats: "%.6e" of the float64 L2 norm and mean, the float min and max
        stats = {
            "Shape": f"torch.Size([2, 16, {64 * (i + 1)}]), Dtype: torch.bfloat16",
            "L2 norm": f"{l2:.6e}",
            "Min": f"{-2.5 - 0.125 * i - step / 3:.6e}",
            "Max": f"{2.75 + 0.25 * i + rank / 7:.6e}",
            "Mean": f"{(step - 2) * 1.5e-3 + i * 1e-5:.6e}",
        }
    out = "" if not has_stats else f"{l2 * 3.5:.6e}"
    ins = ", ".join(f"{v:.6e}" for v in (100.0 + step + i, 20.0 + rank))
    prods = ";" + ("tok_embeddings/op_0_embedding" if i else "")
    frames = [_StackFrame("torchtitan/models/common/decoder.py", 100 + i)]
    return Cap(stats, phase, out, ins, prods, frames)


def write_run(run, changed, inserted):
    here = os.path.dirname(os.path.abspath(__file__))
    for step in (1, 2, 3):
        for rank in (0, 1):
            caps = {}
            for i, (key, phase, has_stats) in enumerate(OPS):
                if inserted and key == CHANGED[2]:
                    caps[INSERTED] = capture(step, rank, 9, INSERTED, "forward", True,
                                             l2_of(step, rank, 9))
                l2 = l2_of(step, rank, i)
                if changed and (step, rank, key) == CHANGED:
                    l2 *= 1.001
                caps[key] = capture(step, rank, i, key, phase, has_stats, l2)
            path = os.path.join(here, run, f"step_{step}", f"rank_{rank}_activations.log")
            dump_captures_to_file(caps, path, skipped_excluded_ops={"view", "t", "detach"})


write_run("a", False, False)
write_run("b", True, True)
