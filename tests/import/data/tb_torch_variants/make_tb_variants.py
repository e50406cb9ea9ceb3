# make_tb_variants.py: how run/ was written (torch 2.15.0's torch.utils.tensorboard, numpy
# 2.2.6, from PyPI; not run by the tests): the ways of add_scalar other than its default,
# and add_scalars, which writes each series into a folder of its own below the run's.
#   python make_tb_variants.py   (prints step, loss, grad_norm as Python floats)
import numpy as np, torch
from torch.utils.tensorboard import SummaryWriter
w = SummaryWriter("run")
for s in range(1, 6):
    v = np.float32(10.0 / (s + 0.123456789))
    w.add_scalar("loss", v, s, new_style=True)            # a float32 tensor, not simple_value
    w.add_scalar("grad_norm", torch.tensor(1.0 + s / 3.0, dtype=torch.float64), s,
                 new_style=True, double_precision=True)   # a float64 tensor
    w.add_scalar("lr", 1e-4 * s, s)                       # simple_value: the float32 of it
    w.add_scalars("Loss", {"train": float(v), "val": float(v) * 2}, s)  # run/Loss_train/, ...
    print(s, repr(float(v)), repr(1.0 + s / 3.0))
w.close()
