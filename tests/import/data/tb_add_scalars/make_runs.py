# make_runs.py: how tensorboardX/ and torch/ were written (tensorboardX 2.6.5, torch 2.15.0
# with its torch.utils.tensorboard, numpy, from PyPI; not run by the tests): two launches of
# a training into one folder, as a job restarted from a checkpoint writes them, each a
# process of its own with add_scalar and add_scalars. Launch 1 logs steps 1-4 and dies;
# launch 2 resumes from step 3 and logs 3-6; "val" is logged every other step.
# - tensorboardX names a file events.out.tfevents.<seconds>.<host> (no pid) and writes the
#   series of add_scalars("Loss", {"train": ..., "val": ...}) into Loss/train/, Loss/val/;
# - torch names it events.out.tfevents.<seconds>.<host>.<pid>.<writer number> and writes
#   the series into Loss_train/, Loss_val/.
# Prints launch, step, loss, train, val.
#   for w in tensorboardX torch; do python make_runs.py $w 1; sleep 2; python make_runs.py $w 2; done
import sys
import numpy as np

writer, launch = sys.argv[1], int(sys.argv[2])
if writer == "torch":
    from torch.utils.tensorboard import SummaryWriter
else:
    from tensorboardX import SummaryWriter
w = SummaryWriter(writer)
for s in (range(1, 5) if launch == 1 else range(3, 7)):
    loss = np.float32(10.0 / (s + 0.123456789 * launch))   # a relaunch's own values
    series = {"train": float(loss) * 1.5}
    if s % 2 == 0:
        series["val"] = float(loss) * 2.5
    w.add_scalar("lm loss", loss, s)
    w.add_scalars("Loss", series, s)
    print(launch, s, repr(float(loss)), repr(series["train"]), repr(series.get("val")))
w.close()
