#!/usr/bin/env python3
"""A libzero trainer's model trained by DeepSpeed, writing libzero's trajectory format
(src/program/trajectory.h), so that `zero diff` compares the two runs step by step.

Run by hand, never in CI (it needs torch, deepspeed and, for GPT-2, transformers;
docs/verify-your-run.md):

    torchrun --nproc-per-node N docs/tools/ds_reference.py --init init.safetensors \
        --data data.safetensors --stage S --batch 24 --micro-batch 2 --steps 4 \
        --lr 1e-2 --trajectory ds.jsonl --weights-every 1
    torchrun --nproc-per-node N docs/tools/ds_reference.py --model gpt2 --n-head 4 \
        --init gpt.safetensors --data book.txt --block-size 16 --stage S --batch 8 \
        --micro-batch 2 --steps 4 --lr 1e-3 --trajectory ds.jsonl

--model mlp (the default) is train_mlp's model: L blocks x = x + Linear(4H, H)(GELU(
Linear(H, 4H)(x))), then a Linear(H, classes) classifier, the mean cross-entropy of the
micro-batch; parameter names as libzero's (layers.0.0.weight, ..., classifier.bias);
--data is train_mlp's safetensors (inputs, labels).

--model gpt2 is train_gpt's: Hugging Face's GPT2LMHeadModel (tied head, tanh GELU,
no dropout) with --init's weights under train_gpt's names (wte.weight, h.0.attn.c_attn.weight
[in, out], ...); --data is the text file train_gpt reads as byte tokens (vocab 256),
sequence s being the window of T + 1 bytes at s*T (include/zero/tokens.h; the training split
is the first 90%, train_gpt's --val-fraction 0.1); the loss is the mean cross-entropy over
the micro-batch's tokens. The trajectory names the tensors as HF's model does
(transformer.wte.weight, ...): `zero diff` matches the prefix.

--model llama is train_gpt --arch llama's: Hugging Face's LlamaForCausalLM loaded with
from_pretrained from the directory --init names (train_gpt's --save-hf output), on the same
byte windows as GPT-2; the trajectory names its tensors as HF does (model.layers.0...), as
libzero's do.

Rank r's micro-batch at micro-step i of step s holds samples s*B + (i*N + r)*m .. + m - 1,
libzero's micro-step-major atoms. The optimizer is torch.optim.AdamW ("torch_adam": true)
with the trainer's defaults (betas 0.9 and 0.999 for the MLP, 0.9 and 0.95 for GPT-2; eps
1e-8; weight decay 0.01 on every tensor), a constant lr, and gradient_clipping 0 unless
--clip is given (DeepSpeed's own default is 1.0).
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


class MlpTask:
    """train_mlp's model and data: safetensors inputs (samples, H) and labels (samples)."""
    betas = (0.9, 0.999)

    def __init__(self, a):
        init, data = load_file(a.init), load_file(a.data)
        self.inputs, self.labels = data["inputs"], data["labels"].long()
        layers = len([k for k in init if k.endswith(".0.weight") and k.startswith("layers.")])
        self.model = MLP(self.inputs.shape[1], layers, init["classifier.weight"].shape[0])
        with torch.no_grad():
            for name, param in self.model.named_parameters():
                param.copy_(init[self.name(name)])

    @staticmethod
    def name(torch_name):  # "layers.0.net.0.weight" -> "layers.0.0.weight"
        return torch_name.replace(".net.", ".")

    def batch(self, first, m, dtype):
        x = self.inputs[first:first + m]
        return (x.to(torch.bfloat16) if dtype == "bf16" else x), self.labels[first:first + m]

    @staticmethod
    def loss(engine, x, y):
        return torch.nn.functional.cross_entropy(engine(x).float(), y)


class Gpt2Task:
    """train_gpt's model on a text file's bytes: windows of T + 1 tokens at s*T."""
    betas = (0.9, 0.95)

    def __init__(self, a):
        from transformers import GPT2Config, GPT2LMHeadModel

        init = load_file(a.init)
        raw = open(a.data, "rb").read()
        train = raw[:len(raw) - int(len(raw) * 0.1)]  # train_gpt's --val-fraction 0.1
        self.tokens = torch.tensor(list(train), dtype=torch.long)
        self.T, self.windows = a.block_size, (len(train) - 1) // a.block_size
        layers = len([k for k in init if k.startswith("h.") and k.endswith(".ln_1.weight")])
        config = GPT2Config(vocab_size=init["wte.weight"].shape[0],
                            n_positions=init["wpe.weight"].shape[0],
                            n_embd=init["wte.weight"].shape[1], n_layer=layers, n_head=a.n_head,
                            activation_function="gelu_new", layer_norm_epsilon=1e-5,
                            resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                            tie_word_embeddings=True)
        self.model = GPT2LMHeadModel(config)
        with torch.no_grad():
            for name, param in self.model.named_parameters():  # the tied lm_head is not listed
                param.copy_(init[name[len("transformer."):]])

    @staticmethod
    def name(torch_name):
        return torch_name  # HF's own names; zero diff drops the "transformer." prefix

    def batch(self, first, m, dtype):
        rows = [self.tokens[w * self.T:w * self.T + self.T + 1]
                for w in ((first + i) % self.windows for i in range(m))]
        seq = torch.stack(rows)
        return seq[:, :-1], seq[:, 1:]

    @staticmethod
    def loss(engine, x, y):
        logits = engine(input_ids=x).logits.float()
        return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))


class LlamaTask(Gpt2Task):
    """train_gpt --arch llama's model from a Hugging Face directory, on the same windows."""

    def __init__(self, a):
        from transformers import LlamaForCausalLM

        raw = open(a.data, "rb").read()
        train = raw[:len(raw) - int(len(raw) * 0.1)]
        self.tokens = torch.tensor(list(train), dtype=torch.long)
        self.T, self.windows = a.block_size, (len(train) - 1) // a.block_size
        self.model = LlamaForCausalLM.from_pretrained(a.init, torch_dtype=torch.float32)


def main():
    p = argparse.ArgumentParser()
    for flag, kind in [("--model", str), ("--init", str), ("--data", str), ("--trajectory", str),
                       ("--stage", int), ("--batch", int), ("--micro-batch", int), ("--steps", int),
                       ("--lr", float), ("--clip", float), ("--weights-every", int),
                       ("--dtype", str), ("--n-head", int), ("--block-size", int)]:
        p.add_argument(flag, type=kind)
    p.set_defaults(model="mlp", stage=0, clip=0.0, weights_every=0, dtype="fp32", n_head=4,
                   block_size=16)
    a = p.parse_args()
    deepspeed.init_distributed(dist_backend="gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    task = {"mlp": MlpTask, "gpt2": Gpt2Task, "llama": LlamaTask}[a.model](a)
    m, accum = a.micro_batch, a.batch // (a.micro_batch * world)
    config = {
        "train_batch_size": a.batch, "train_micro_batch_size_per_gpu": m,
        "gradient_accumulation_steps": accum, "gradient_clipping": a.clip,
        "optimizer": {"type": "AdamW", "params": {"lr": a.lr, "betas": list(task.betas), "eps": 1e-8,
                                                  "weight_decay": 0.01, "torch_adam": True}},
        "zero_optimization": {"stage": a.stage}, "steps_per_print": 1 << 30,
    }
    if a.dtype == "bf16":
        config["bf16"] = {"enabled": True}
    engine, _, _, _ = deepspeed.initialize(model=task.model, model_parameters=task.model.parameters(),
                                           config=config)
    names = [(task.name(n), prm) for n, prm in engine.module.named_parameters()]
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
            x, y = task.batch(step * a.batch + (i * world + rank) * m, m, a.dtype)
            loss = task.loss(engine, x, y)
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
