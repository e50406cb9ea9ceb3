# make_tbx_scalars.py: how run/ was written (tensorboardX 2.6.5 from PyPI, numpy; not run by
# the tests): two launches of a training into one folder, as a job restarted from a
# checkpoint writes them, each a process of its own with add_scalar and add_scalars.
# tensorboardX names a file events.out.tfevents.<seconds>.<host> (no pid) and writes the
# series of add_scalars("Loss", {"train": ..., "val": ...}) into run/Loss/train/ and
# run/Loss/val/. Launch 1 logs steps 1-4 and dies; launch 2 resumes from step 3 and logs
# 3-6; "val" is logged every other step. Prints step, loss, train, val of each launch.
#   python make_tbx_scalars.py 1; sleep 2; python make_tbx_scalars.py 2
import sys
import numpy as np
from tensorboardX import SummaryWriter

launch = int(sys.argv[1])
w = SummaryWriter("run")
for s in (range(1, 5) if launch == 1 else range(3, 7)):
    loss = np.float32(10.0 / (s + 0.123456789 * launch))   # a relaunch's own values
    series = {"train": float(loss) * 1.5}
    if s % 2 == 0:
        series["val"] = float(loss) * 2.5
    w.add_scalar("lm loss", loss, s)
    w.add_scalars("Loss", series, s)
    print(launch, s, repr(float(loss)), repr(series["train"]), repr(series.get("val")))
w.close()
