# make_hparams.py: how tb_hparams/ was written (torch 2.15.0, tensorboardX 2.6.5; run in
# this folder, not by the tests). Each SummaryWriter logs three steps and calls add_hparams,
# which writes its hparams into a folder of its own, named str(time.time()), beside the
# run's file: the summaries "_hparams_/experiment", "_hparams_/session_start_info",
# "_hparams_/session_end_info" and metric_dict's scalars at step 0 (test_import_real.c).
from torch.utils.tensorboard import SummaryWriter
import tensorboardX
w = SummaryWriter("torch")
for i in range(1, 4):
    w.add_scalar("train/loss", 1.0 / i, i)
w.add_hparams({"lr": 0.1, "bs": 32}, {"hparam/accuracy": 0.75, "hparam/loss": 0.5})
w.close()
w = tensorboardX.SummaryWriter("tensorboardX")
for i in range(1, 4):
    w.add_scalar("train/loss", 1.0 / i, i)
w.add_hparams({"lr": 0.1, "bs": 32}, {"hparam/accuracy": 0.75, "hparam/loss": 0.5})
w.close()
