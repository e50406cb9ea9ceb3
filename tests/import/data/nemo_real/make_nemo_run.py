# make_nemo_run.py: how console.log and tb/ were written (torch 2.15.0, lightning 2.6.6 and
# tensorboard 2.21.0 from PyPI, on the CPU; not run by the tests). The console is NeMo 2's own
# ProgressPrinter: nemo/lightning/pytorch/callbacks/progress_printer.py of NVIDIA/NeMo at
# 8cfedd7203, put beside this script as progress_printer.py, with a folder megatron/core/ whose
# num_microbatches_calculator.py says "def get_num_microbatches(): return 1" (the printer's one
# import of Megatron, for its validation lines). The metrics are logged by the names NeMo 2's
# MegatronStrategy logs them; tb/ is Lightning's TensorBoardLogger of the same run.
#   PYTHONPATH=. python make_nemo_run.py > console.log
import sys, time, torch, lightning.pytorch as pl
from lightning.pytorch.loggers import TensorBoardLogger
from progress_printer import ProgressPrinter
torch.manual_seed(0)
class M(pl.LightningModule):
    def __init__(self):
        super().__init__(); self.net = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Tanh(), torch.nn.Linear(32, 4))
    def training_step(self, b, i):
        t0 = time.time(); x, y = b
        loss = torch.nn.functional.cross_entropy(self.net(x), y)
        self.log("reduced_train_loss", loss, prog_bar=True, batch_size=8)
        self.log("lr", self.optimizers().param_groups[0]["lr"], prog_bar=True, batch_size=8)
        self.log("global_step", float(self.trainer.global_step), prog_bar=True, batch_size=8)
        self.log("consumed_samples", float((self.trainer.global_step + 1) * 8), prog_bar=True, batch_size=8)
        self.log("train_step_timing in s", time.time() - t0 + 0.5, prog_bar=True, batch_size=8)
        return loss
    def validation_step(self, b, i):
        x, y = b; self.log("val_loss", torch.nn.functional.cross_entropy(self.net(x), y), prog_bar=True, batch_size=8)
    def configure_optimizers(self):
        o = torch.optim.AdamW(self.parameters(), lr=6e-4)
        return {"optimizer": o, "lr_scheduler": {"scheduler": torch.optim.lr_scheduler.LambdaLR(o, lambda s: min(1.0, (s + 1) / 10)), "interval": "step"}}
class S(pl.strategies.SingleDeviceStrategy):
    @property
    def current_epoch_step(self):  # as NeMo's FSDPStrategy.current_epoch_step (8cfedd7)
        l = self.lightning_module.trainer.fit_loop.epoch_loop
        return max(l.automatic_optimization.optim_progress.optimizer.step.current.completed,
                   l.manual_optimization.optim_step_progress.current.completed)
X = torch.randn(96, 16); Y = (X[:, 0] > 0).long() + 2 * (X[:, 1] > 0).long()
dl = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, Y), batch_size=8)
vl = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X[:16], Y[:16]), batch_size=8)
t = pl.Trainer(max_steps=int(sys.argv[1]) if len(sys.argv) > 1 else 12, strategy=S(device="cpu"), callbacks=[ProgressPrinter(log_interval=1)],
               logger=TensorBoardLogger("tb", name="nemo_like"), log_every_n_steps=1, val_check_interval=6,
               enable_checkpointing=False, num_sanity_val_steps=0)
t.fit(M(), dl, vl)
