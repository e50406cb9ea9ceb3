# make_ranks_one_dir.py: how tb_ranks_one_dir/ was written (torch 2.15.0; run in this folder,
# not by the tests): two processes, as torchrun's ranks, each a SummaryWriter on the same
# log_dir, so its two event files differ by pid alone and their events overlap in time
# (test_import_real.c: refused, not read as a launch and its restart).
import time
import torch.multiprocessing as mp


def worker(rank):
    from torch.utils.tensorboard import SummaryWriter
    w = SummaryWriter("shared")
    for i in range(20):
        w.add_scalar("train/loss", 1.0 + rank + i / 10, i)
        time.sleep(0.1)
    w.close()


if __name__ == "__main__":
    mp.spawn(worker, nprocs=2)
