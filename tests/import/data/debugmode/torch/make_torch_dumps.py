"""
make_torch_dumps.py: dumps written by PyTorch's own DebugMode (not after its source: by it),
as a user takes them. Ran with torch 2.15.0+cu132 on the CPU (2026-11-29); the files beside
it are its output, kept as written. A 3-Linear net (Net.fc1..fc3, ReLU between), one forward
and backward under

    with DebugMode(record_nn_module=True) as dm, DebugMode.log_tensor_hashes(
            hash_fn=["norm", "hash_tensor"], hash_inputs=True):

then DebugMode.save_logs(dm.logs, NAME.json) and dm.debug_string() into NAME.txt, for
    clean   seed 0
    plant   fc2.weight[0, 0] += 1e-3: the first tensor that differs is fc2's weight, the
            input of its aten::t
    insert  plant, and x * 1.0 before the net: an op the others lack (aten::mul.Tensor)

    python make_torch_dumps.py   # in this folder, with torch installed
"""
import torch
from torch.utils._debug_mode import DebugMode

nn = torch.nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 16)
        self.fc3 = nn.Linear(16, 4)

    def forward(self, x):
        return self.fc3(torch.relu(self.fc2(torch.relu(self.fc1(x)))))


def dump(name, plant=False, insert=False):
    torch.manual_seed(0)
    m = Net()
    x = torch.randn(4, 8)
    if plant:
        with torch.no_grad():
            m.fc2.weight[0, 0] += 1e-3
    run = (lambda v: m(v * 1.0)) if insert else m
    with DebugMode(record_nn_module=True) as dm, DebugMode.log_tensor_hashes(
            hash_fn=["norm", "hash_tensor"], hash_inputs=True):
        run(x).sum().backward()
    DebugMode.save_logs(dm.logs, name + ".json")
    with open(name + ".txt", "w") as f:
        f.write(dm.debug_string())


dump("clean")
dump("plant", plant=True)
dump("insert", plant=True, insert=True)
