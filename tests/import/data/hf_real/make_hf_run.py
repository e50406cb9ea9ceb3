"""
make_hf_run.py: a Hugging Face Trainer run, written by transformers itself (not after its
source: by it), as a user's nightly leaves it. Ran with transformers 5.24.0 and torch
2.15.0+cu132 on the CPU (2026-11-29); the files beside it are its output, kept as written
(the model's weights and optimizer state left out):

    python make_hf_run.py output > console.log                             # steps 1-8
    python make_hf_run.py output output/checkpoint-4 > console_resumed.log  # resumed: 5-8
    python make_hf_run.py /tmp/x --tqdm > console_tqdm.log 2>&1           # tqdm's bars too
    torchrun --nproc-per-node 2 --tee 3 make_hf_run.py /tmp/y --tqdm \
        > torchrun/console.log 2>&1     # 2 processes (gloo); /tmp/y/checkpoint-8's
                                        # trainer_state.json is torchrun/'s

A GPT-2 of 2 layers (vocab 64, width 32) trained 8 steps on fixed random tokens, logging
every step, evaluating and saving every 4, reporting to TensorBoard. So:
  - output/runs/<Mon DD_HH-MM-SS_host>/events.out.tfevents.*: a folder per launch, the resumed
    one's steps 5-8 again; train/epoch written twice at steps 4 and 8 (with the
    evaluation's log, and at 8 with the run's summary);
  - output/checkpoint-4/ and output/checkpoint-8/trainer_state.json: log_history, the loss at
    full precision (transformers 5 no longer rounds it);
  - console*.log: PrinterCallback's dicts, each float a string of 4 digits ('3.915');
    console_tqdm.log ProgressCallback's (the default), written through tqdm after its bar
    and a carriage return, stderr with it (made with torch 2.7.0, transformers 5.24.0);
  - torchrun/console.log: the same through torchrun --tee (torch 2.15.0), each line of each
    process prefixed "[default0]:", a bar's pieces (torchrun ends a line at a carriage
    return, and writes it without a newline) joined with the line after them.
"""
import sys

import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

torch.manual_seed(0)
model = GPT2LMHeadModel(GPT2Config(vocab_size=64, n_positions=16, n_embd=32, n_layer=2,
                                   n_head=2))


class Tokens(torch.utils.data.Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        ids = torch.randint(0, 64, (16,), generator=torch.Generator().manual_seed(i))
        return {"input_ids": ids, "labels": ids}


args = TrainingArguments(output_dir=sys.argv[1], max_steps=8, per_device_train_batch_size=4,
                         logging_steps=1, save_steps=4, eval_strategy="steps", eval_steps=4,
                         report_to=["tensorboard"], use_cpu=True, learning_rate=1e-3,
                         disable_tqdm="--tqdm" not in sys.argv, seed=0)
resume = sys.argv[2] if len(sys.argv) > 2 and sys.argv[2] != "--tqdm" else None
Trainer(model=model, args=args, train_dataset=Tokens(), eval_dataset=Tokens()).train(
    resume_from_checkpoint=resume)
