"""
test_tb_live.py: event files written here, now, by the TensorBoard writers users run
(tensorboardX, and torch.utils.tensorboard where torch is installed), imported by lockstep
and read back bit for bit.

    python test_tb_live.py LOCKSTEP_BIN TMPDIR

For each writer: two launches of a training, each a process of its own, into one folder
(the second restarted from step 4, as a job resumed from a checkpoint), each logging with
add_scalar float32 values of random bits (finite: normal, subnormal, the largest, -0.0) and
with add_scalars a chart of two series ("train" every step, "val" every third). After
'lockstep import' of the folder, 'lockstep export --format jsonl' must give, at every step,
the float32 logged by the launch that logged it last, to the bit: the loss and both series
(their tags "Loss/train", "Loss/val", stored '/' made '_'), and nothing at a step a series
did not log. Then one byte of the first launch's event file is changed: the import is
refused (exit 2) naming that file and a byte offset, and stores no run.

Exit status: 0 passed, 77 skipped (no tensorboardX), 1 failed; each check prints a line.
"""

import json
import os
import shutil
import struct
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
SKIP = 77
STEPS = 9
RESTART = 4  # the second launch resumes here

WRITER = r"""
import struct, sys
import numpy as np
if sys.argv[1] == "torch":
    from torch.utils.tensorboard import SummaryWriter
else:
    from tensorboardX import SummaryWriter
launch, folder = int(sys.argv[2]), sys.argv[3]
rng = np.random.default_rng(1234 + launch)
special = [np.float32(1.4e-45), np.float32(-0.0), np.finfo(np.float32).max,
           np.float32(1.17549435e-38)]

def value(s, k):
    # a float32 of random bits, finite; a special one now and then
    if (s + k) % 5 == 0:
        return special[(s + k) % len(special)]
    while True:
        f = np.frombuffer(rng.integers(0, 2**32, dtype=np.uint32).tobytes(), np.float32)[0]
        if np.isfinite(f):
            return f

w = SummaryWriter(folder)
for s in (range(1, 10) if launch == 1 else range(4, 10)):
    if launch == 1 and s > 6:
        break  # the first launch dies after step 6
    loss, train, val = value(s, 0), value(s, 1), value(s, 2)
    w.add_scalar("lm loss", loss, s)
    series = {"train": float(train)}
    if s % 3 == 0:
        series["val"] = float(val)
    w.add_scalars("Loss", series, s)
    for name, v in (("loss", loss), ("Loss_train", train), ("Loss_val", val)):
        if name != "Loss_val" or s % 3 == 0:
            print(s, name, struct.unpack("<I", struct.pack("<f", v))[0])
w.close()
"""


class Checks:
    """Counts checks; a failed one is printed and the script goes on to the next."""

    def __init__(self):
        self.n = 0
        self.failed = 0

    def check(self, ok, what):
        self.n += 1
        if not ok:
            self.failed += 1
        print(("ok     " if ok else "FAILED ") + what)
        return ok


def logged(writer, tmp, folder):
    """Runs the two launches; {(step, name): float32 bits} of the one that logged last."""
    want = {}
    for launch in (1, 2):
        out = subprocess.run([sys.executable, "-c", WRITER, writer, str(launch), folder],
                             capture_output=True, text=True, check=True, cwd=tmp).stdout
        if launch == 2:  # a restart drops what the first launch logged from there on
            want = {k: v for k, v in want.items() if k[0] < RESTART}
        for row in out.splitlines():
            s, name, bits = row.split()
            want[(int(s), name)] = int(bits)
        if launch == 1:
            time.sleep(1.1)  # tensorboardX names its files by the second they began
    return want


def stored(lockstep, db, run):
    """{(step, name): float32 bits} of the run as 'lockstep export' gives it."""
    out = subprocess.run([lockstep, "export", "--db", db, "--format", "jsonl", run],
                         capture_output=True, text=True, check=True).stdout
    got = {}
    for row in out.splitlines():
        r = json.loads(row)
        for k, v in r.items():
            if k not in ("step", "rank"):
                got[(r["step"], k)] = struct.unpack("<I", struct.pack("<f", v))[0]
    return got


def writers():
    have = []
    for name, module in (("tensorboardX", "tensorboardX"), ("torch", "torch.utils.tensorboard")):
        try:
            __import__(module)
            have.append(name)
        except ImportError:
            print("no %s here: its part skipped" % module)
    return have


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    lockstep, tmp = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    have = writers()
    if "tensorboardX" not in have:
        return SKIP
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    c = Checks()
    for writer in have:
        folder = os.path.join(tmp, writer)
        db = os.path.join(tmp, writer + ".db")
        want = logged(writer, tmp, folder)
        r = subprocess.run([lockstep, "import", "--db", db, "--format", "tensorboard",
                            "--case", "live", "--run", writer, folder],
                           capture_output=True, text=True)
        if not c.check(r.returncode == 0, "%s: import exit %d %s" % (writer, r.returncode,
                                                                     r.stderr.strip())):
            continue
        c.check("1 rank restart" in r.stdout and "not read" not in r.stdout,
                "%s: one restart, nothing left unread: %s" % (writer, r.stdout.strip()))
        got = stored(lockstep, db, "live/" + writer)
        c.check(len(want) == STEPS * 2 + STEPS // 3, "%s: %d values logged" % (writer, len(want)))
        bad = [(k, want[k], got.get(k)) for k in sorted(want) if got.get(k) != want[k]]
        c.check(not bad, "%s: every float32 as logged, bits %s" % (writer, bad[:3]))
        more = sorted(set(got) - set(want))
        c.check(not more, "%s: nothing stored that was not logged %s" % (writer, more[:3]))

        # a byte of the first launch's file changed: refused at an offset, nothing stored
        first = sorted(f for f in os.listdir(folder) if f.startswith("events.out.tfevents."))[0]
        path = os.path.join(folder, first)
        with open(path, "r+b") as f:
            f.seek(os.path.getsize(path) // 2)
            b = f.read(1)
            f.seek(-1, os.SEEK_CUR)
            f.write(bytes([b[0] ^ 0x10]))
        r = subprocess.run([lockstep, "import", "--db", db, "--format", "tensorboard",
                            "--case", "live", "--run", "bad", folder],
                           capture_output=True, text=True)
        c.check(r.returncode == 2 and first in r.stderr and ": byte " in r.stderr,
                "%s: a changed byte refused: exit %d %s" % (writer, r.returncode,
                                                            r.stderr.strip()))
        runs = subprocess.run([lockstep, "list", "--db", db], capture_output=True,
                              text=True).stdout
        c.check("bad" not in runs, "%s: no run 'bad' stored" % writer)
    print("%d checks, %d failed" % (c.n, c.failed))
    shutil.rmtree(tmp, ignore_errors=True)
    return 1 if c.failed else 0


if __name__ == "__main__":
    sys.exit(main())
