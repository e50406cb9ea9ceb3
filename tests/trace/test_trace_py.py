"""
test_trace_py.py: lockstep-trace's Python module (kernels/trace/lockstep_trace.py) on numpy
arrays, end to end through the C library and lockstep's store.

    python test_trace_py.py LOCKSTEP_BIN LIB_PATH TMPDIR

Two ranks of one run (two Trace objects on one database, closed in turn) trace a few arrays
for 3 steps: float32, float16, float64 (converted), a strided view, one with a NaN and an
infinity, an empty one, a 1-element one, one past many 32-lane rounds, and a gradient of
microbatch 1. 'lockstep export --format tensor-jsonl' must give every record, in order per
step and rank, with the statistics recomputed here from their definition (kernels/cpu/
stats.h) bit for bit: amax as numpy's, the non-finite count, the L2 norm as the 32-lane sum
in float64 summed as a balanced tree, and (where the xxhash package is installed) XXH3-64 of
the float32 bytes with NaN as 0x7fc00000. The same arrays traced again are identical for
'lockstep diff' (exit 0); one value changed at step 2 on rank 1 makes it exit 1 naming step
2, rank 1 and the tensor. Bad calls raise RuntimeError with the library's message, or
ValueError for a number beyond a C int (a rank, world size, phase, microbatch or step that
ctypes would pass on wrapped) and for a name or path holding NUL (which would end it there).
A complex array measures as its real and imaginary parts interleaved.

Exit status: 0 passed, 77 skipped (no numpy), 1 failed; each check prints a line. The
helpers (run, export, expected statistics) serve test_trace_torch.py too.
"""

import json
import math
import os
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "kernels", "trace"))

SKIP = 77
CASE = "pytrace"
LANES = 32


class Checks:
    """Counts checks; a failed one is printed and the script goes on to the next."""

    def __init__(self, name):
        self.name, self.passed, self.failed = name, 0, 0

    def ok(self, cond, what, detail=""):
        if cond:
            self.passed += 1
            print("ok    %s" % what)
        else:
            self.failed += 1
            print("FAIL  %s%s" % (what, (": " + detail) if detail else ""))
        return cond

    def finish(self):
        print("%s: %d passed, %d failed" % (self.name, self.passed, self.failed))
        return 0 if self.failed == 0 and self.passed > 0 else 1


def usage(argv, script):
    if len(argv) != 4:
        print("usage: %s LOCKSTEP_BIN LIB_PATH TMPDIR" % script)
        sys.exit(2)
    lockstep, lib, tmp = argv[1:]
    os.makedirs(tmp, exist_ok=True)
    return lockstep, lib, tmp


def run(cmd):
    """(exit status, stdout + stderr) of a command."""
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return p.returncode, p.stdout


def export(lockstep, db, run_name, case=CASE):
    """The records of CASE/run_name as 'lockstep export --format tensor-jsonl' gives them,
    statistics as floats ("nan", "inf", "-inf" read back as such); None if it failed."""
    rc, out = run([lockstep, "export", "--format", "tensor-jsonl", "%s/%s" % (case, run_name),
                   "--db", db])
    if rc != 0:
        print("lockstep export exited %d:\n%s" % (rc, out))
        return None
    recs = []
    for line in out.splitlines():
        o = json.loads(line)
        for k in ("l2", "amax", "nonfinite"):
            if isinstance(o.get(k), str):
                o[k] = float(o[k])
        recs.append(o)
    return recs


def first_divergence(out):
    """The 'first divergence:' line of lockstep diff's output, or ''."""
    for line in out.splitlines():
        if line.startswith("first divergence"):
            return line
    return ""


def sumsq_32_lanes(x32):
    """The sum of squares as kernels/cpu/stats.h defines it, written out plainly: lane l
    sums float64(x[i])^2 for i = l mod 32 in index order (a float32's square is exact in
    float64), then the lanes are added pairwise, adjacent pairs, level by level."""
    lane = [0.0] * LANES
    for i, v in enumerate(x32.ravel().tolist()):
        lane[i % LANES] += v * v
    while len(lane) > 1:
        lane = [lane[2 * k] + lane[2 * k + 1] for k in range(len(lane) // 2)]
    return lane[0]


def expected(np, x, xxhash):
    """What lockstep-trace must store of array x: its float32 values' l2, amax, nonfinite
    and (with xxhash; else None) hash."""
    x32 = np.ascontiguousarray(np.asarray(x).astype(np.float32)).ravel()
    if x32.size == 0:
        amax = 0.0
    elif np.isnan(x32).any():
        amax = float("nan")
    else:
        amax = float(np.max(np.abs(x32)))
    h = None
    if xxhash is not None:
        b = x32.view(np.uint32).copy()
        b[np.isnan(x32)] = 0x7FC00000
        h = "%016x" % xxhash.xxh3_64_intdigest(b.tobytes())
    return {"l2": math.sqrt(sumsq_32_lanes(x32)), "amax": amax,
            "nonfinite": int(np.count_nonzero(~np.isfinite(x32))), "hash": h}


def same_float(a, b):
    """a and b the same float64 (NaN equal to NaN)."""
    return (math.isnan(a) and math.isnan(b)) or a == b


def check_stats(c, np, xxhash, rec, x, label):
    """The statistics of export record rec against those of array x."""
    e = expected(np, x, xxhash)
    c.ok(same_float(rec["l2"], e["l2"]), "%s l2 bit for bit" % label,
         "%r, expected %r" % (rec["l2"], e["l2"]))
    c.ok(same_float(rec["amax"], e["amax"]), "%s amax" % label,
         "%r, expected %r" % (rec["amax"], e["amax"]))
    c.ok(rec["nonfinite"] == e["nonfinite"], "%s nonfinite" % label,
         "%r, expected %r" % (rec["nonfinite"], e["nonfinite"]))
    c.ok(isinstance(rec.get("hash"), str) and len(rec["hash"]) == 16, "%s hash: 16 hex digits"
         % label, repr(rec.get("hash")))
    if e["hash"] is not None:
        c.ok(rec["hash"] == e["hash"], "%s hash is XXH3-64 of the float32 bytes" % label,
             "%s, expected %s" % (rec["hash"], e["hash"]))


# ---- the numpy test ----

def arrays(np, step, rank):
    """The records of (step, rank), in the order traced: (name, array, phase, micro)."""
    rng = np.random.default_rng(1000 * step + rank)
    nan = rng.standard_normal((4, 9)).astype(np.float32)
    nan[1, 3] = np.nan
    nan[2, 0] = -np.inf
    wide = rng.standard_normal((6, 20)).astype(np.float32)
    return [
        ("embed.output", rng.standard_normal(37).astype(np.float32), "forward", -1),
        ("attn.output", nan, "forward", -1),
        ("mlp.fc1.output", (rng.standard_normal((3, 11)) * 300).astype(np.float16),
         "forward", -1),
        ("mlp.fc2.output", rng.standard_normal(29) * 1e-3, "forward", -1),   # float64
        ("mlp.strided", wide[:, ::3], "forward", -1),                          # a view
        ("empty", np.zeros((0, 5), dtype=np.float32), "forward", -1),
        ("one", np.array([-(step + rank + 1.5)], dtype=np.float32), "forward", -1),
        ("long", rng.standard_normal(1003).astype(np.float32) * (step + 1), "forward", -1),
        ("mlp.fc1.grad_output", rng.standard_normal(70).astype(np.float32), "backward", 1),
    ]


def trace_run(lt, lib, db, run_name, change=None):
    """Traces arrays() into CASE/run_name as ranks 0 and 1 of 2, step by step, closing
    rank 0 then rank 1. change(step, rank, recs) may alter the records first."""
    import numpy as np

    t = [lt.Trace(db, CASE, run_name, rank=r, world_size=2, lib=lib) for r in (0, 1)]
    for step in range(3):
        for r in (0, 1):
            recs = arrays(np, step, r)
            if change:
                change(step, r, recs)
            for name, x, phase, micro in recs:
                t[r].tensor(name, x, phase=phase, micro=micro)
            t[r].step(step)
    t[0].close()
    t[1].close()


def run_status(db, run_name):
    """(status, steps (its last step), messages of its failed ranks) of CASE/run_name's
    latest run."""
    import sqlite3

    con = sqlite3.connect(db)
    try:
        rid, status, steps = con.execute(
            "SELECT run_id, status, steps FROM runs WHERE case_name = ? AND run_name = ? "
            "ORDER BY run_id DESC LIMIT 1", (CASE, run_name)).fetchone()
        why = [m for (m,) in con.execute("SELECT message FROM events WHERE run_id = ? AND "
                                         "kind = 'trace_rank_failed'", (rid,))]
    finally:
        con.close()
    return status, steps, why


# A script that traces steps 0 and 1, gives a tensor of step 2, then ends as END says.
ENDING = """
import sys
sys.path.insert(0, %r)
import numpy as np
import lockstep_trace as lt
t = lt.Trace(%r, %r, sys.argv[1], lib=%r)
for step in range(2):
    t.tensor("w", np.ones(4, dtype=np.float32) * step)
    t.step(step)
t.tensor("w", np.ones(4, dtype=np.float32))
END
"""


def ending(c, lt, lib, tmp):
    """A training that fails is stored failed, with why, its whole steps kept: out of a
    `with` block by an exception, by abort(), or a process ending by an uncaught exception
    (KeyboardInterrupt too), or exiting with a status other than 0 (sys.exit(1),
    sys.exit("why")). A normal end, sys.exit(0) and an exception caught do not."""
    import numpy as np

    db = os.path.join(tmp, "trace_py_end.db")
    for f in (db, db + "-wal", db + "-shm"):
        if os.path.exists(f):
            os.remove(f)
    try:
        with lt.Trace(db, CASE, "with", lib=lib) as t:
            t.tensor("w", np.ones(2, dtype=np.float32))
            t.step(0)
            t.tensor("w", np.ones(2, dtype=np.float32))
            raise ValueError("loss went NaN")
    except ValueError:
        pass
    st = run_status(db, "with")
    c.ok(st == ("failed", 0, ["ValueError: loss went NaN"]),
         "a with block left by an exception: the run failed, step 0 kept, why stored", repr(st))
    t = lt.Trace(db, CASE, "abort", lib=lib)
    t.step(0)
    t.abort("out of memory at step 1")
    t.abort()  # again: nothing
    st = run_status(db, "abort")
    c.ok(st == ("failed", 0, ["out of memory at step 1"]), "abort(why)", repr(st))
    script = ENDING % (os.path.join(REPO, "kernels", "trace"), db, CASE, lib)
    for name, end, status, why in (
            ("uncaught", "raise RuntimeError('the loader died')", "failed",
             ["RuntimeError: the loader died"]),
            ("interrupt", "raise KeyboardInterrupt", "failed", ["KeyboardInterrupt"]),
            ("exit0", "sys.exit(0)", "complete", []),
            ("exitnone", "sys.exit()", "complete", []),
            ("exit1", "sys.exit(1)", "failed", ["the process exited with status 1"]),
            ("exitstr", "sys.exit('fatal: diverged')", "failed",
             ["the process exited with status 1"]),
            ("raise3", "raise SystemExit(3)", "failed", ["the process exited with status 3"]),
            ("caught", "try:\n    raise OSError('x')\nexcept OSError:\n    pass", "complete",
             []),
            ("plain", "pass", "complete", [])):
        rc, out = run([sys.executable, "-c", script.replace("END", end), name])
        st = run_status(db, name)
        # a traced run's steps are its last step: a failed run keeps its whole steps (to 1),
        # a complete one the tensor given after them as a step of its own (2)
        want = (status, 1 if status == "failed" else 2, why)
        c.ok(st == want, "a process ending %s: the run %s" % (name, status),
             "%r, expected %r (exit %d)\n%s" % (st, want, rc, out))


def launches(c, lt, lib, tmp):
    """A launch's key from its launcher's environment; a relaunched job's ranks (job=) make
    a run of their own, not joining the dead launch's."""
    import sqlite3

    for env, want in (({"TORCHELASTIC_RUN_ID": "3f2a-9", "TORCHELASTIC_RESTART_COUNT": "2"},
                       "3f2a-9.2"),
                      ({"TORCHELASTIC_RUN_ID": "none", "SLURM_JOB_ID": "812"}, "slurm812.0"),
                      ({"TORCHELASTIC_RUN_ID": "a/b c"}, "a_b_c.0"),
                      ({}, "")):
        c.ok(lt.launch_key(env) == want, "launch_key(%r) is %r" % (env, want),
             repr(lt.launch_key(env)))
    # a long id (torchrun's --rdzv-id is the user's: a job name and a uuid, say): each
    # restart a key of its own, which the library takes; two long ids, two keys
    rid = "trainjob-llama3-8b-fp8-rowwise-nightly-2026-11-30-a1b2c3d4e5f6a7"
    keys = {}
    for name, env in [("%s/%s" % (r, n), {"TORCHELASTIC_RUN_ID": r,
                                          "TORCHELASTIC_RESTART_COUNT": n})
                      for r in (rid, rid[:-1] + "8", "-" + rid[:3])
                      for n in ("0", "1", "12")] + \
            [("slurm60/%s" % n, {"SLURM_JOB_ID": "1" * 60, "SLURM_RESTART_COUNT": n})
             for n in ("0", "3")]:
        key = lt.launch_key(env)
        keys[key] = name
        ok = len(key) <= 63 and key.endswith("." + name.split("/")[-1])
        c.ok(ok, "launch_key of %s keeps its restart count, at most 63 characters" % name,
             repr(key))
    c.ok(len(keys) == 11, "11 launches, 11 keys", repr(keys))
    db = os.path.join(tmp, "trace_py_launch.db")
    for f in (db, db + "-wal", db + "-shm"):
        if os.path.exists(f):
            os.remove(f)
    for key in keys:  # each a key the library takes
        lt.Trace(db, CASE, "k", lib=lib, job=key).close()
    lt.Trace(db, CASE, "r", rank=0, world_size=2, lib=lib, job="first").close()
    late = lt.Trace(db, CASE, "r", rank=1, world_size=2, lib=lib, job="second")
    lt.Trace(db, CASE, "r", rank=0, world_size=2, lib=lib, job="second").close()
    late.close()
    con = sqlite3.connect(db)
    rows = con.execute("SELECT options, status FROM runs WHERE run_name = 'r' "
                       "ORDER BY run_id").fetchall()
    con.close()
    c.ok(rows == [("job=first", "incomplete"), ("job=second", "complete")],
         "a relaunch (job=) makes a run of its own, complete", repr(rows))


def main(argv):
    lockstep, lib, tmp = usage(argv, "test_trace_py.py")
    try:
        import numpy as np
    except ImportError:
        print("skipped: numpy is not installed")
        return SKIP
    try:
        import xxhash
    except ImportError:
        xxhash = None
    import lockstep_trace as lt

    c = Checks("test_trace_py")
    db = os.path.join(tmp, "trace_py.db")
    for f in (db, db + "-wal", db + "-shm"):
        if os.path.exists(f):
            os.remove(f)
    loaded = lt.load(lib)
    # device tensors: a bool and, where they cannot be measured on a GPU, why
    on_gpu, why = lt.device_support(loaded)
    c.ok(on_gpu or "device tensors" in why, "device_support says why not (%r)" % why)

    # rank 0 and rank 1 of run a, then the same into run b
    trace_run(lt, lib, db, "a")
    recs = export(lockstep, db, "a")
    if not c.ok(recs is not None, "export of %s/a" % CASE):
        return c.finish()
    want = [(s, r, m, p, n) for s in range(3) for r in (0, 1)
            for n, _, p, m in arrays(np, s, r)]
    got = [(o["step"], o["rank"], o.get("micro", -1), o["phase"], o["tensor"]) for o in recs]
    c.ok(got == want, "every record, in order per step and rank (%d)" % len(want),
         "got %r" % got[:12])
    if got == want:
        for o in recs:
            x = dict((n, x) for n, x, _, _ in arrays(np, o["step"], o["rank"]))[o["tensor"]]
            check_stats(c, np, xxhash, o, x, "step %d rank %d %s" % (o["step"], o["rank"],
                                                                     o["tensor"]))
    if xxhash is None:
        print("skipped: the hash against XXH3-64 (the Python package xxhash is not installed)")

    trace_run(lt, lib, db, "b")
    rc, out = run([lockstep, "diff", "%s/a" % CASE, "%s/b" % CASE, "--db", db])
    c.ok(rc == 0, "lockstep diff of the same arrays: identical (exit 0)",
         "exit %d\n%s" % (rc, out))
    c.ok(out.count("steps up to 2") == 2, "diff says a traced run's steps as its last (2)",
         out)

    def change(step, rank, recs):
        if step == 2 and rank == 1:
            x = recs[4][1].copy()                 # mlp.strided, the fifth of the step
            x[1, 2] = np.float32(x[1, 2] + 1)
            recs[4] = (recs[4][0], x, recs[4][2], recs[4][3])

    trace_run(lt, lib, db, "c", change)
    rc, out = run([lockstep, "diff", "%s/a" % CASE, "%s/c" % CASE, "--db", db])
    first = first_divergence(out)
    c.ok(rc == 1, "lockstep diff with one value changed: differ (exit 1)",
         "exit %d\n%s" % (rc, out))
    c.ok("step 2" in first and "rank 1" in first and "mlp.strided" in first,
         "the first divergence is step 2, rank 1, mlp.strided", repr(first) + "\n" + out)
    print(first)

    # bad calls: the library's message, as RuntimeError
    edb = os.path.join(tmp, "trace_py_errors.db")
    for f in (edb, edb + "-wal", edb + "-shm"):
        if os.path.exists(f):
            os.remove(f)
    try:
        lt.Trace(edb, CASE, "bad", rank=2, world_size=2, lib=lib)
        c.ok(False, "rank 2 of world size 2 refused")
    except RuntimeError as e:
        c.ok("rank 2 of world size 2" in str(e), "rank 2 of world size 2 refused", str(e))
    # a number beyond a C int, which ctypes would pass on wrapped (2**32 + k as k): refused
    # as ValueError naming the argument, before the library sees it
    for what, kw in (("rank 2**32", dict(rank=2**32, world_size=1)),
                     ("world_size 2**32 + 1", dict(rank=0, world_size=2**32 + 1))):
        try:
            lt.Trace(edb, CASE, "bad", lib=lib, **kw).close()
            c.ok(False, "%s refused" % what)
        except ValueError as e:
            c.ok(what.split()[0] in str(e), "%s refused (ValueError)" % what, str(e))
    # a NUL ends a C string: 'a\0hidden' would be stored as 'a', a case 'x\0y' open 'x'
    for what, args in (("a case name holding NUL", (edb, CASE + "\0x", "bad")),
                       ("a run name holding NUL", (edb, CASE, "bad\0x")),
                       ("a database path holding NUL", (edb + "\0x", CASE, "bad"))):
        try:
            lt.Trace(*args, lib=lib).close()
            c.ok(False, "%s refused" % what)
        except ValueError as e:
            c.ok("NUL" in str(e), "%s refused (ValueError)" % what, str(e))
    with lt.Trace(edb, CASE, "bad", lib=lib) as t:
        try:
            t.tensor("a\0hidden", np.ones(2))
            c.ok(False, "a tensor name holding NUL refused")
        except ValueError as e:
            c.ok("NUL" in str(e) and "hidden" in str(e), "a tensor name holding NUL refused "
                 "(ValueError)", str(e))
        for what, args, says in (("an empty name", ("", np.ones(2)), "name"),
                                 ("a name of 256 bytes", ("x" * 256, np.ones(2)), "name"),
                                 ("an unknown phase", ("x", np.ones(2), "sideways"), "phase")):
            try:
                t.tensor(*args)
                c.ok(False, "%s refused" % what)
            except (RuntimeError, ValueError) as e:
                c.ok(says in str(e), "%s refused" % what, str(e))
        for what, call in (("micro 2**32 + 3", lambda: t.tensor("x", np.ones(2), micro=2**32 + 3)),
                           ("phase 2**32", lambda: t.tensor("x", np.ones(2), phase=2**32)),
                           ("step 2**32 + 7", lambda: t.step(2**32 + 7))):
            try:
                call()
                c.ok(False, "%s refused" % what)
            except ValueError as e:
                c.ok(what.split()[0] in str(e), "%s refused (ValueError)" % what, str(e))
        t.tensor("x", np.ones(3, dtype=np.float32))
        pid = os.fork()
        if pid == 0:  # a DataLoader worker, say: the parent's trace is not the child's
            try:
                t.tensor("x", np.ones(1))
            except RuntimeError as e:
                os._exit(0 if "forked" in str(e) else 1)
            os._exit(1)
        c.ok(os.waitpid(pid, 0)[1] == 0, "a forked child cannot trace into its parent's trace")
        t.step(5)
        try:
            t.step(5)
            c.ok(False, "a step again refused")
        except RuntimeError as e:
            c.ok("ascend" in str(e), "a step again refused", str(e))
    c.ok(t.closed, "the context manager closed the trace")
    try:
        t.tensor("x", np.ones(1))
        c.ok(False, "a closed trace refuses tensors")
    except RuntimeError as e:
        c.ok("closed" in str(e), "a closed trace refuses tensors", str(e))
    t.close()  # again: nothing

    # a complex array: its parts interleaved (as torch.view_as_real), complex128's each
    # converted to float32; a big-endian one as its values
    z = (np.arange(14) * 0.7 - 3).reshape(7, 2).T.copy().astype(np.complex64)
    z.imag = np.arange(7) * -1.3
    kinds = [("c64", z), ("c128", z.astype(np.complex128)), ("c64be", z.astype(">c8"))]
    with lt.Trace(edb, CASE, "complex", lib=lib) as t:
        for name, x in kinds:
            t.tensor(name, x)
        t.step(0)
    recs = export(lockstep, edb, "complex")
    if c.ok(recs is not None and [o["tensor"] for o in recs] == [k for k, _ in kinds],
            "export of %s/complex" % CASE):
        parts = np.stack([z.real, z.imag], axis=-1).astype(np.float32)
        for o in recs:
            check_stats(c, np, xxhash, o, parts, "%s as its parts interleaved" % o["tensor"])

    ending(c, lt, lib, tmp)
    launches(c, lt, lib, tmp)

    # finding the library: the path given, else LOCKSTEP_TRACE_LIB
    os.environ["LOCKSTEP_TRACE_LIB"] = lib
    c.ok(lt.load() is lt.load(lib), "LOCKSTEP_TRACE_LIB names the library")
    missing = os.path.join(tmp, "no-such-liblockstep-trace.so")
    os.environ["LOCKSTEP_TRACE_LIB"] = missing
    for what, arg in (("a path given", missing), ("LOCKSTEP_TRACE_LIB", None)):
        try:
            lt.load(arg)
            c.ok(False, "%s that does not exist: OSError" % what)
        except OSError as e:
            c.ok(missing in str(e), "%s that does not exist: OSError" % what, str(e))
    del os.environ["LOCKSTEP_TRACE_LIB"]
    return c.finish()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
