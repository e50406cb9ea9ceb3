"""
make_nvdlfw.py: statistics logs written by nvidia-dlfw-inspect itself (not after its
source: by it), its own LogTensorStats (the feature TransformerEngine's debug features
build on) on a small torch model. Ran with nvdlfw-inspect 0.2.2 and torch 2.15.0 on the CPU
(2026-11-29); clean/ and plant/ beside it are its output, kept as written: each the log_dir
given to debug_api.initialize, with nvdlfw_inspect_statistics_logs/ (the statistics) and
nvdlfw_inspect_logs/ (its messages, in a file of the same name).

    python make_nvdlfw.py clean          # in this folder
    python make_nvdlfw.py plant 1        # fc1's output moved by 1.0 at one element, step 3

Linear(8, 16), ReLU, Linear(16, 4), 5 SGD steps; per step fc1's and fc2's activation,
weight and weight gradient, each with min, max, mean, std, l1_norm and l2_norm (cfg.yaml).
"""
import os
import sys

import nvdlfw_inspect.api as debug_api
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
plant = len(sys.argv) > 2
debug_api.initialize(config_file=os.path.join(HERE, "cfg.yaml"), log_dir=sys.argv[1],
                     default_logging_enabled=True)
torch.manual_seed(0)
nn = torch.nn
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
x = torch.randn(32, 8)
y = torch.randn(32, 4)
names = {0: "model.fc1", 2: "model.fc2"}


def log(layer, tensor, t):
    debug_api.log_tensor_stats(layer, tensor_name=tensor, tensor=t.detach(), skip_reduction=True)


for step in range(5):
    h = model[0](x)
    if plant and step == 3:
        h = h.clone()
        h[0, 0] += 1.0
    log(names[0], "activation", h)
    out = model[2](model[1](h))
    log(names[2], "activation", out)
    loss = ((out - y) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    for i, n in names.items():
        log(n, "weight", model[i].weight)
        log(n, "gradient", model[i].weight.grad)
    opt.step()
    debug_api.step()
