# make_lightning_run.py: how lightning_logs/ was written (torch 2.15.0, lightning 2.6.6 and
# tensorboard from PyPI, on the CPU; not run by the tests): Lightning's TensorBoardLogger of
# a training of 6 steps that logs its loss with self.log and a chart of two series with
# logger.log_metrics({"Loss": {"train": ..., "half": ...}}), which Lightning hands to
# SummaryWriter.add_scalars (lightning/fabric/loggers/tensorboard.py, log_metrics). Launch 1
# stops after step 4 with a checkpoint of step 2; launch 2, a process of its own, resumes
# from it (ckpt_path) into version_1/ and trains steps 3-6 again. Each printed line is the
# launch, Lightning's global step (the events' step) and the float32 bits of loss, train,
# half as logged.
#   python make_lightning_run.py 1 > launch1.txt; python make_lightning_run.py 2 > launch2.txt
import struct, sys, torch, lightning.pytorch as pl
from lightning.pytorch.loggers import TensorBoardLogger

launch = int(sys.argv[1])
torch.manual_seed(0)


def bits(v):
    return struct.unpack("<I", struct.pack("<f", float(v)))[0]


class M(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Linear(8, 2)

    def training_step(self, b, i):
        x, y = b
        loss = torch.nn.functional.cross_entropy(self.net(x), y)
        step = self.trainer.global_step
        self.log("train_loss", loss, batch_size=4)
        train, half = loss.item() * 1.5, loss.item() / 2
        self.logger.log_metrics({"Loss": {"train": train, "half": half}}, step=step)
        print(launch, step, bits(loss.item()), bits(train), bits(half), flush=True)
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


data = torch.utils.data.TensorDataset(torch.randn(24, 8), torch.randint(0, 2, (24,)))
loader = torch.utils.data.DataLoader(data, batch_size=4)
logger = TensorBoardLogger(".", name="lightning_logs")
ckpt = pl.callbacks.ModelCheckpoint(dirpath="ckpt", every_n_train_steps=2, save_top_k=-1)
trainer = pl.Trainer(max_steps=4 if launch == 1 else 6, logger=logger, log_every_n_steps=1,
                     callbacks=[ckpt], enable_progress_bar=False, enable_model_summary=False,
                     accelerator="cpu", devices=1)
trainer.fit(M(), loader, ckpt_path=None if launch == 1 else "ckpt/epoch=0-step=2.ckpt")
