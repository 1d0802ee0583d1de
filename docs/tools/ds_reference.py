#!/usr/bin/env python3
"""The toy MLP of examples/train_mlp trained by DeepSpeed, writing libzero's trajectory
format (examples/trajectory.h), so that `zero diff` compares the two runs step by step.

Run by hand, never in CI (it needs torch and deepspeed; docs/verify-your-run.md):

    torchrun --nproc-per-node N docs/tools/ds_reference.py --init init.safetensors \
        --data data.safetensors --stage S --batch 24 --micro-batch 2 --steps 4 \
        --lr 1e-2 --trajectory ds.jsonl --weights-every 1

The model is libzero's: L blocks x = x + Linear(4H, H)(GELU(Linear(H, 4H)(x))), then a
Linear(H, classes) classifier and the mean cross-entropy of the micro-batch; parameter
names as libzero's (layers.0.0.weight, ..., classifier.bias). Rank r's micro-batch at
micro-step i of step s holds samples s*B + (i*N + r)*m .. + m - 1 of --data, libzero's
micro-step-major atoms. The optimizer is torch.optim.AdamW ("torch_adam": true) with
libzero's trainer defaults (betas 0.9, 0.999, eps 1e-8, weight decay 0.01) and
gradient_clipping 0 unless --clip is given (DeepSpeed's own default is 1.0).
"""
import argparse
import json
import os
import struct

import torch
import torch.distributed as dist
import deepspeed
from safetensors.torch import load_file, save_file

FNV_OFFSET, FNV_PRIME, MASK = 0xCBF29CE484222325, 0x100000001B3, (1 << 64) - 1


def fnv1a64(t):
    h = FNV_OFFSET
    for b in t.detach().to(torch.float32).contiguous().cpu().numpy().tobytes():
        h = ((h ^ b) * FNV_PRIME) & MASK
    return "%016x" % h


class Block(torch.nn.Module):
    def __init__(self, h):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(h, 4 * h), torch.nn.GELU(), torch.nn.Linear(4 * h, h))

    def forward(self, x):
        return x + self.net(x)


class MLP(torch.nn.Module):
    def __init__(self, h, layers, classes):
        super().__init__()
        self.layers = torch.nn.ModuleList([Block(h) for _ in range(layers)])
        self.classifier = torch.nn.Linear(h, classes)

    def forward(self, x):
        for b in self.layers:
            x = b(x)
        return self.classifier(x)


def libzero_name(name):  # "layers.0.net.0.weight" -> "layers.0.0.weight"
    return name.replace(".net.", ".")


def main():
    p = argparse.ArgumentParser()
    for flag, kind in [("--init", str), ("--data", str), ("--trajectory", str), ("--stage", int),
                       ("--batch", int), ("--micro-batch", int), ("--steps", int), ("--lr", float),
                       ("--clip", float), ("--weights-every", int), ("--dtype", str)]:
        p.add_argument(flag, type=kind)
    p.set_defaults(stage=0, clip=0.0, weights_every=0, dtype="fp32")
    a = p.parse_args()
    deepspeed.init_distributed(dist_backend="gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    init = load_file(a.init)
    data = load_file(a.data)
    inputs, labels = data["inputs"], data["labels"].long()
    hidden = inputs.shape[1]
    layers = len([k for k in init if k.endswith(".0.weight") and k.startswith("layers.")])
    classes = init["classifier.weight"].shape[0]
    model = MLP(hidden, layers, classes)
    with torch.no_grad():
        for name, param in model.named_parameters():
            param.copy_(init[libzero_name(name)])
    m, accum = a.micro_batch, a.batch // (a.micro_batch * world)
    config = {
        "train_batch_size": a.batch, "train_micro_batch_size_per_gpu": m,
        "gradient_accumulation_steps": accum, "gradient_clipping": a.clip,
        "optimizer": {"type": "AdamW", "params": {"lr": a.lr, "betas": [0.9, 0.999], "eps": 1e-8,
                                                  "weight_decay": 0.01, "torch_adam": True}},
        "zero_optimization": {"stage": a.stage}, "steps_per_print": 1 << 30,
    }
    if a.dtype == "bf16":
        config["bf16"] = {"enabled": True}
    engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=config)
    names = [(libzero_name(n), prm) for n, prm in engine.module.named_parameters()]
    out = open(a.trajectory, "w") if rank == 0 else None

    def record(step, numbers):
        params = [prm for _, prm in names]
        with deepspeed.zero.GatheredParameters(params, enabled=a.stage == 3):
            whole = {n: prm.detach().to(torch.float32).clone() for n, prm in names}
        if rank != 0:
            return
        line = {"step": step}
        line.update(numbers)
        line["hashes"] = {n: fnv1a64(t) for n, t in whole.items()}
        if step == 0 or (a.weights_every and step % a.weights_every == 0):
            path = "%s.step%06d.safetensors" % (a.trajectory, step)
            save_file(whole, path, metadata={"format": "pt", "step": str(step)})
            line["weights"] = os.path.basename(path)
        out.write(json.dumps(line) + "\n")
        out.flush()

    if rank == 0:
        head = {"trajectory": 1, "program": "deepspeed-%s" % deepspeed.__version__, "world": world,
                "stage": a.stage, "compute_dtype": a.dtype, "atom_order": "micro_step_major",
                "order_seed": 0, "global_batch": a.batch, "micro_batch": m, "accumulation": accum,
                "hash": "fnv1a64-f32le",
                "tensors": [{"name": n, "shape": list(prm.ds_shape if a.stage == 3 else prm.shape)}
                            for n, prm in names]}
        out.write(json.dumps(head) + "\n")
    record(0, {})
    for step in range(a.steps):
        loss_sum = torch.zeros(1, dtype=torch.float64)
        for i in range(accum):
            first = step * a.batch + (i * world + rank) * m
            x, y = inputs[first:first + m], labels[first:first + m]
            if a.dtype == "bf16":
                x = x.to(torch.bfloat16)
            loss = torch.nn.functional.cross_entropy(engine(x).float(), y)
            loss_sum += loss.detach().double()
            engine.backward(loss)
            lr = engine.get_lr()[0]  # the lr this step's update uses
            engine.step()
        dist.all_reduce(loss_sum)
        norm = engine.get_global_grad_norm()
        norm = float(norm) if norm is not None else None  # stage 0 without clipping: not computed
        record(step + 1, {"loss": loss_sum.item() / (accum * world), "grad_norm": norm, "lr": lr,
                          "loss_scale": 1.0, "skipped": False})


if __name__ == "__main__":
    main()
