# tb_tensorboardx.py: how tb_tensorboardx.tfevents was written (tensorboardX 2.6.5, numpy 2.4.6,
# "pip install tensorboardX"; not run by the tests): the float32 bits it prints are those
# test_import.c holds the import to.
# writes an event file with tensorboardX: float32 values of known bits at steps 1..5
import struct, numpy as np
from tensorboardX import SummaryWriter
w = SummaryWriter("run", filename_suffix=".lockstep")
vals = {}
for step in range(1, 6):
    loss = np.float32(10.0 / (step + 0.123456789))      # not a short decimal
    gn = np.float32(1.0 + step * 0.3333333)
    w.add_scalar("lm loss", loss, step)
    w.add_scalar("grad-norm", gn, step)
    w.add_scalar("iteration-time", np.float32(0.25 + step * 1e-3), step)
    vals[step] = (loss, gn)
w.close()
for s, (l, g) in vals.items():
    print(s, struct.unpack("<I", struct.pack("<f", l))[0], repr(float(l)), repr(float(g)))
# tb_megatron.log (after its 4 lines of header): the same values as Megatron-LM's training_log
# prints them
for s in range(1, 6):
    l, g = vals[s]
    print(" [2026-01-05 10:00:%02d] iteration        %d/       5 | consumed samples:          %d"
          " | elapsed time per iteration (ms): %.1f | learning rate: 1.000000E-04 | global batch"
          " size:    64 | lm loss: %.6E | loss scale: 1.0 | grad norm: %.3f | number of skipped"
          " iterations:   0 | number of nan iterations:   0 |"
          % (s * 8, s, s * 64, float(np.float32(0.25 + s * 1e-3)) * 1000, float(l), float(g)))
