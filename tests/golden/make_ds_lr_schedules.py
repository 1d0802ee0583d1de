#!/usr/bin/env python3
"""Writes tests/golden/ds_lr_schedules.txt: the learning rate of each of the first 12
updates under DeepSpeed's own schedulers, for tests/test_lr_reference.sh to compare with
libzero's trajectories bit for bit. Run by hand with deepspeed installed (CI never runs
it):  python tests/golden/make_ds_lr_schedules.py tests/golden/ds_lr_schedules.txt

DeepSpeed sets the first update's lr in the scheduler's constructor and calls
scheduler.step() after every update, so update k uses the optimizer's lr after k - 1
steps of the scheduler."""
import json
import sys

import torch
import deepspeed
from deepspeed.runtime import lr_schedules

LR, UPDATES = 0.01, 12
CASES = [
    ("WarmupLR", dict(warmup_min_lr=0.001, warmup_max_lr=0.01, warmup_num_steps=5, warmup_type="log")),
    ("WarmupLR", dict(warmup_min_lr=0.0, warmup_max_lr=0.02, warmup_num_steps=4, warmup_type="linear")),
    ("WarmupDecayLR", dict(total_num_steps=10, warmup_min_lr=0.001, warmup_max_lr=0.01, warmup_num_steps=3,
                           warmup_type="log")),
    ("WarmupDecayLR", dict(total_num_steps=9, warmup_min_lr=0.0, warmup_max_lr=0.01, warmup_num_steps=1,
                           warmup_type="linear")),
    ("WarmupCosineLR", dict(total_num_steps=10, warmup_min_ratio=0.1, warmup_num_steps=4, cos_min_ratio=0.01,
                            warmup_type="log")),
    ("WarmupCosineLR", dict(total_num_steps=8, warmup_min_ratio=0.0, warmup_num_steps=2, cos_min_ratio=0.0001,
                            warmup_type="linear")),
]

out = open(sys.argv[1], "w")  # DeepSpeed logs to stdout
out.write("# deepspeed %s: scheduler, its params as JSON, then the lr of updates 1..%d\n" %
          (deepspeed.__version__, UPDATES))
for name, params in CASES:
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=LR)
    sched = getattr(lr_schedules, name)(opt, **params)
    lrs = []
    for _ in range(UPDATES):
        lr = opt.param_groups[0]["lr"]
        lrs.append(float(lr))
        opt.step()
        sched.step()
    out.write("%s %s %s\n" % (name, json.dumps(params, sort_keys=True, separators=(",", ":")),
                              " ".join("%.17g" % x for x in lrs)))
