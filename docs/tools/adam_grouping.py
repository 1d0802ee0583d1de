#!/usr/bin/env python3
"""The same gradients through torch.optim.AdamW and through libzero's grouping of the same
update (src/base/host_optim.c: m_hat / (sqrt(v_hat) + eps), decay as p - (lr wd) p), each
operation rounded to fp32: how many ulps apart the weights are after each step.

Run by hand (it needs torch; docs/verify-your-run.md section 4):  python adam_grouping.py

Weights that start at 1.0 (LayerNorm gains) agree for two steps and then drift by 1-2 ulps:
there Adam's normalization makes the update nearly independent of the gradient's rounding,
so libzero's envelope of summation orders is 0 and only the formula's grouping shows.
"""
import numpy as np
import torch

f = np.float32
n, lr, b1, b2, eps, wd = 4096, 1e-3, 0.9, 0.95, 1e-8, 0.01  # train_gpt's betas and decay
rng = np.random.default_rng(0)
for start in (1.0, 0.02):
    p_t = torch.full((n,), start, dtype=torch.float32, requires_grad=True)
    opt = torch.optim.AdamW([p_t], lr=lr, betas=(b1, b2), eps=eps, weight_decay=wd)
    p, m, v = np.full(n, start, f), np.zeros(n, f), np.zeros(n, f)
    for t in range(1, 5):
        g = (rng.standard_normal(n) * 0.05).astype(f)
        p_t.grad = torch.from_numpy(g.copy())
        opt.step()
        bc1, bc2 = f(1 - b1**t), f(1 - b2**t)
        p = f(p - f(f(lr * wd) * p))
        m = f(f(f(b1) * m) + f(f(1 - b1) * g))
        v = f(f(f(b2) * v) + f(f(f(1 - b2) * g) * g))
        p = f(p - f(f(lr) * f(f(m / bc1) / f(np.sqrt(f(v / bc2)) + f(eps)))))
        ulps = np.abs(p_t.detach().numpy().view(np.int32).astype(np.int64) -
                      p.view(np.int32).astype(np.int64))
        values, counts = np.unique(ulps[ulps > 0], return_counts=True)
        print("start %-4g step %d: %4d of %d differ, ulps %s" %
              (start, t, (ulps > 0).sum(), n, {int(u): int(c) for u, c in zip(values, counts)}))
