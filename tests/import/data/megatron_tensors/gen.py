# gen.py: writes the megatron-tensors fixtures beside it (python3 gen.py; plain Python; the
# tests read its output, committed, and do not run it). Each file is what Megatron-LM's
# ActivationLogger.save_tpe writes (NVIDIA/Megatron-LM d98e8a64,
# megatron/training/activation_logging.py; --save-tokens-per-expert-interval 1), its lines
# copied here; the counts are made up, each derived from (iter, rank, layer, call, expert).
#
# Two runs, a and b, of 2 ranks (expert parallel: 4 local experts each) x 3 iterations, 2
# microbatches each: {run}/rank{r}.jsonl. MoE layers 1 and 3 of the decoder and the MTP
# block's layer 0; run b makes decoder layer 2 MoE too (an inserted module, before layer 3)
# and differs from a in expert 3's count of decoder layer 3, microbatch 1, at iteration 2
# on rank 1.
import json
import os
from collections import defaultdict

CHANGED = (2, 1, 3, 1, 3)  # iter, rank, layer, call, expert


class ActivationLogger:
    """The part of Megatron-LM's that writes the file, as it is."""

    def __init__(self, save_dir, rank):
        self._save_dir, self._rank = save_dir, rank
        self._decoder_tpe_records = defaultdict(list)
        self._mtp_tpe_records = defaultdict(list)

    def save_tpe(self, iteration: int):
        if not self._decoder_tpe_records and not self._mtp_tpe_records:
            return
        rank = self._rank  # torch.distributed.get_rank()
        tpe_dir = self._save_dir  # os.path.join(self._save_dir, "tokens_per_expert")
        os.makedirs(tpe_dir, exist_ok=True)
        filepath = os.path.join(tpe_dir, f"rank{rank}.jsonl")
        lines = []
        for layer, microbatches in sorted(self._decoder_tpe_records.items()):
            lines.append(json.dumps({
                "iter": iteration, "block": "decoder",
                "layer": layer, "tpe": microbatches,
            }) + "\n")
        for (mtp_idx, layer), microbatches in sorted(self._mtp_tpe_records.items()):
            lines.append(json.dumps({
                "iter": iteration, "block": "mtp",
                "mtp_idx": mtp_idx, "layer": layer, "tpe": microbatches,
            }) + "\n")
        with open(filepath, "a") as f:
            f.writelines(lines)
        self._decoder_tpe_records.clear()
        self._mtp_tpe_records.clear()


def counts(it, rank, layer, call, changed):
    c = [100 + 7 * it + 13 * rank + 5 * layer + 3 * call + 11 * e for e in range(4)]
    if changed and (it, rank, layer, call) == CHANGED[:4]:
        c[CHANGED[4]] += 1
    return c


def write_run(run, changed, moe_layers):
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), run)
    os.makedirs(here, exist_ok=True)
    for rank in (0, 1):
        path = os.path.join(here, f"rank{rank}.jsonl")
        if os.path.exists(path):
            os.remove(path)  # the writer appends
        log = ActivationLogger(here, rank)
        for it in (1, 2, 3):
            for call in (0, 1):  # the forward hooks, microbatch by microbatch
                for layer in moe_layers:
                    log._decoder_tpe_records[layer].append(counts(it, rank, layer, call,
                                                                  changed))
                log._mtp_tpe_records[(0, 0)].append(counts(it, rank, 9, call, changed))
            log.save_tpe(it)


write_run("a", False, (1, 3))
write_run("b", True, (1, 2, 3))
