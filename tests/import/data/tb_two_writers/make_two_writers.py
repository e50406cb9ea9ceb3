# make_two_writers.py: how tensorboardX/ was written (tensorboardX 2.6.5 from PyPI; not run
# by the tests): one training that logs through two writers at once, exp/train/ and
# exp/val/, as tutorials do. tensorboardX names its files by start and host alone, so the
# names do not say that one process wrote both; the events' wall times do: val's first
# event comes before train's last. Given exp/, lockstep must refuse it rather than read
# val/ as a restart of train/.
#   python make_two_writers.py
import time
from tensorboardX import SummaryWriter

train = SummaryWriter("tensorboardX/exp/train")
val = SummaryWriter("tensorboardX/exp/val")
for s in range(1, 7):
    train.add_scalar("loss", 10.0 / s, s)
    if s % 2 == 0:
        val.add_scalar("loss", 12.0 / s, s)
    time.sleep(0.5)
train.close()
val.close()
