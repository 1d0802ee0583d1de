"""PyTorch's own GPT-2 training step on the CPU, for bench/bf16_step's side-by-side numbers.

By hand only, in a venv with torch and transformers (CI never installs PyTorch):

    torchrun --nproc_per_node 2 bench/torch_gpt_step.py --precision bf16 [--block-size 64]
        [--batch 4] [--steps 3] [--warmup 1] [--threads 1]

GPT-2 124M's shape (12 layers, 768 wide, 12 heads, vocabulary 50304, as bench/bf16_step),
random weights, pseudo-random tokens, DistributedDataParallel over gloo, AdamW (lr 1e-4,
weight decay 0.1), gradient clipping 1.0; bf16 = torch.autocast (bf16 products through
oneDNN, which uses the processor's bf16 instructions: AVX512-BF16, AMX). Prints the median
seconds per step (the slowest rank, between barriers) and tokens per second.
"""

import argparse
import os
import statistics
import time

import torch
import torch.distributed as dist
from transformers import GPT2Config, GPT2LMHeadModel


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--precision", choices=["fp32", "bf16"], default="bf16")
    p.add_argument("--block-size", type=int, default=64)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--threads", type=int, default=1)
    a = p.parse_args()
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    cfg = GPT2Config(n_layer=12, n_embd=768, n_head=12, vocab_size=50304,
                     n_positions=a.block_size, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    model = torch.nn.parallel.DistributedDataParallel(GPT2LMHeadModel(cfg))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.1)
    g = torch.Generator().manual_seed(1 + rank)
    tokens = torch.randint(0, 50304, (a.batch, a.block_size + 1), generator=g)
    x, y = tokens[:, :-1], tokens[:, 1:]
    times = []
    for step in range(a.warmup + a.steps):
        dist.barrier()
        t0 = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.precision == "bf16"):
            logits = model(input_ids=x).logits
        loss = torch.nn.functional.cross_entropy(logits.float().view(-1, 50304), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        t = torch.tensor(time.perf_counter() - t0)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        if step >= a.warmup:
            times.append(t.item())
    if rank == 0:
        s = statistics.median(times)
        print(f"torch {torch.__version__} {a.precision}: {world} ranks x {a.threads} threads, "
              f"B={a.batch} T={a.block_size}: {s:.3f} s/step, "
              f"{a.batch * a.block_size * world / s:.0f} tokens/s")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
