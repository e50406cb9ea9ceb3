"""
make_fixtures.py: two runs' TransformerEngine debug statistics as nvidia-dlfw-inspect writes
them (harness/import/import_te_debug.c cites the source): per rank
nvdlfw_inspect_statistics_logs/nvdlfw_inspect_globalrank-N.log, each line the handler's
"%(asctime)s - %(levelname)s - %(message)s" around log_scalar's
"{} \\t\\t\\t\\t iteration={:06d} \\t\\t\\t\\t value={:.4f}", the name
"{layer_name}_{tensor_name}_{stat}" as LogTensorStats and LogFp8TensorStats give it.
2 ranks, iterations 1 to 3. Run b equals run a but: the l2_norm of decoder.1.mlp.fc1's
gradient at iteration 2 on rank 1 differs in its last printed digit, and every iteration
logs one layer more before decoder.1.mlp.fc1 (decoder.1.mlp.norm: an op inserted).

    python3 make_fixtures.py   (writes run_a/ and run_b/ beside it)
"""
import os

HERE = os.path.dirname(os.path.abspath(__file__))
STATS = ["min", "max", "mean", "std", "l1_norm", "l2_norm", "cur_amax", "dynamic_range"]
LAYERS = [("decoder.1.self_attention.linear_qkv", ["activation", "weight", "gradient"]),
          ("decoder.1.mlp.fc1", ["activation", "weight", "gradient", "wgrad"]),
          ("decoder.1.mlp.fc2", ["activation", "output"])]


def value(layer, tensor, stat, it, rank):
    base = 1.0 + 0.5 * len(layer) % 7 + 0.25 * len(tensor) + 0.125 * STATS.index(stat)
    return base + 0.0625 * it + (0.03125 * rank if tensor != "weight" else 0.0)


def write(run, plant):
    for rank in range(2):
        d = os.path.join(HERE, run, "nvdlfw_inspect_statistics_logs")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "nvdlfw_inspect_globalrank-%d.log" % rank), "w") as f:
            sec = 0
            for it in range(1, 4):
                layers = list(LAYERS)
                if plant:
                    layers.insert(1, ("decoder.1.mlp.norm", ["output"]))
                for layer, tensors in layers:
                    for tensor in tensors:
                        for stat in STATS:
                            v = value(layer, tensor, stat, it, rank)
                            if (plant and it == 2 and rank == 1 and layer == "decoder.1.mlp.fc1"
                                    and tensor == "gradient" and stat == "l2_norm"):
                                v += 0.0001
                            msg = "{} \t\t\t\t iteration={:06d} \t\t\t\t value={:.4f}".format(
                                "%s_%s_%s" % (layer, tensor, stat), it, v)
                            sec += 1
                            f.write("2025-06-02 10:%02d:%02d,117 - INFO - %s\n"
                                    % (sec // 60 % 60, sec % 60, msg))
                    if layer == "decoder.1.mlp.fc1":  # an FP8 statistic of a recipe simulated
                        msg = "{} \t\t\t\t iteration={:06d} \t\t\t\t value={:.4f}".format(
                            "%s_activation_mxfp8_underflows%%" % layer, it, 0.5 + it)
                        f.write("2025-06-02 10:59:59,000 - INFO - %s\n" % msg)


write("run_a", False)
write("run_b", True)
