"""A character-level GPT trained with ember.

Written against PyTorch's API (`import ember as torch`; `--backend torch` runs the very same code
on PyTorch): token + position embeddings, pre-norm transformer blocks with causal self-attention
through nn.functional.scaled_dot_product_attention(is_causal=True), LayerNorm, an MLP with GELU,
AdamW with weight-decay groups (no decay for biases, norms and embeddings), a cosine learning-rate
schedule with linear warmup (LambdaLR), gradient clipping with clip_grad_norm_, and sampling with
temperature and top-k (topk + multinomial).

    python examples/char_gpt.py                         # trains on examples/data/lighthouse.txt
    python examples/char_gpt.py my.txt --steps 2000 --n-layer 4 --n-embd 128
"""
import argparse
import math
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_TEXT = os.path.join(HERE, "data", "lighthouse.txt")


def build_gpt(torch):
    """Return the GPT class written against `torch` (ember or PyTorch)."""
    nn = torch.nn
    F = torch.nn.functional

    class CausalSelfAttention(nn.Module):
        def __init__(self, n_embd, n_head, dropout):
            super().__init__()
            assert n_embd % n_head == 0, "n_embd must be divisible by n_head"
            self.n_head = n_head
            self.dropout = dropout
            self.qkv = nn.Linear(n_embd, 3 * n_embd)
            self.proj = nn.Linear(n_embd, n_embd)
            self.resid_drop = nn.Dropout(dropout)

        def forward(self, x):
            B, T, C = x.shape
            q, k, v = self.qkv(x).split(C, dim=2)
            q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)   # (B, H, T, D)
            k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            y = F.scaled_dot_product_attention(
                q, k, v, dropout_p=self.dropout if self.training else 0.0, is_causal=True)
            y = y.transpose(1, 2).contiguous().view(B, T, C)
            return self.resid_drop(self.proj(y))

    class Block(nn.Module):
        def __init__(self, n_embd, n_head, dropout):
            super().__init__()
            self.ln1 = nn.LayerNorm(n_embd)
            self.attn = CausalSelfAttention(n_embd, n_head, dropout)
            self.ln2 = nn.LayerNorm(n_embd)
            self.mlp = nn.Sequential(
                nn.Linear(n_embd, 4 * n_embd), nn.GELU(), nn.Linear(4 * n_embd, n_embd),
                nn.Dropout(dropout))

        def forward(self, x):
            x = x + self.attn(self.ln1(x))
            return x + self.mlp(self.ln2(x))

    class GPT(nn.Module):
        def __init__(self, vocab_size, block_size, n_layer=2, n_embd=64, n_head=4, dropout=0.0):
            super().__init__()
            self.block_size = block_size
            self.tok_emb = nn.Embedding(vocab_size, n_embd)
            self.pos_emb = nn.Embedding(block_size, n_embd)
            self.drop = nn.Dropout(dropout)
            self.blocks = nn.ModuleList(
                [Block(n_embd, n_head, dropout) for _ in range(n_layer)])
            self.ln_f = nn.LayerNorm(n_embd)
            self.head = nn.Linear(n_embd, vocab_size, bias=False)
            self.apply(self._init_weights)

        @staticmethod
        def _init_weights(m):
            if isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, mean=0.0, std=0.02)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, nn.Embedding):
                nn.init.normal_(m.weight, mean=0.0, std=0.02)

        def forward(self, idx, targets=None):
            B, T = idx.shape
            pos = torch.arange(T, dtype=torch.long)
            x = self.drop(self.tok_emb(idx) + self.pos_emb(pos))
            for block in self.blocks:
                x = block(x)
            logits = self.head(self.ln_f(x))
            loss = None
            if targets is not None:
                loss = F.cross_entropy(logits.view(B * T, -1), targets.view(B * T))
            return logits, loss

        def param_groups(self, weight_decay):
            """AdamW groups: decay the Linear weights only (not biases, norms, embeddings)."""
            decay = {id(m.weight) for m in self.modules() if isinstance(m, nn.Linear)}
            params = list(self.parameters())
            return [
                {"params": [p for p in params if id(p) in decay], "weight_decay": weight_decay},
                {"params": [p for p in params if id(p) not in decay], "weight_decay": 0.0},
            ]

        @torch.no_grad()
        def generate(self, idx, max_new_tokens, temperature=1.0, top_k=None, generator=None):
            for _ in range(max_new_tokens):
                logits, _ = self(idx[:, -self.block_size:])
                logits = logits[:, -1, :] / temperature
                if top_k is not None:
                    v, _ = torch.topk(logits, min(top_k, logits.shape[-1]))
                    logits = logits.masked_fill(logits < v[:, [-1]], float("-inf"))
                probs = F.softmax(logits, dim=-1)
                nxt = torch.multinomial(probs, num_samples=1, generator=generator)
                idx = torch.cat([idx, nxt], dim=1)
            return idx

    return GPT


def cosine_with_warmup(warmup, total, min_ratio=0.1):
    """LambdaLR factor: linear warmup to 1, then cosine decay to min_ratio."""
    def f(step):
        if step < warmup:
            return (step + 1) / warmup
        progress = min(1.0, (step - warmup) / max(1, total - warmup))
        return min_ratio + (1.0 - min_ratio) * 0.5 * (1.0 + math.cos(math.pi * progress))
    return f


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("text", nargs="?", default=DEFAULT_TEXT, help="a UTF-8 text file")
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--block-size", type=int, default=32)
    p.add_argument("--n-layer", type=int, default=2)
    p.add_argument("--n-embd", type=int, default=64)
    p.add_argument("--n-head", type=int, default=4)
    p.add_argument("--dropout", type=float, default=0.0)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--weight-decay", type=float, default=0.1)
    p.add_argument("--warmup", type=int, default=None, help="default: 10%% of --steps")
    p.add_argument("--grad-clip", type=float, default=1.0)
    p.add_argument("--log-every", type=int, default=25)
    p.add_argument("--sample-len", type=int, default=200)
    p.add_argument("--temperature", type=float, default=0.8)
    p.add_argument("--top-k", type=int, default=10)
    p.add_argument("--prompt", default="The ")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--backend", choices=["ember", "torch"], default="ember")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    if args.backend == "torch":
        import torch
        torch.set_num_threads(1)
    else:
        sys.path.insert(0, os.path.dirname(HERE))
        import ember as torch
    torch.manual_seed(args.seed)

    with open(args.text, encoding="utf-8") as f:
        text = f.read()
    chars = sorted(set(text))
    stoi = {c: i for i, c in enumerate(chars)}
    data = torch.tensor([stoi[c] for c in text], dtype=torch.long)
    n_val = max(args.block_size + 2, len(data) // 10)
    train_data, val_data = data[:-n_val], data[-n_val:]
    if len(train_data) <= args.block_size + 1:
        sys.exit(f"text too short for --block-size {args.block_size}")
    print(f"[{args.backend}] {os.path.basename(args.text)}: {len(text)} characters, "
          f"vocabulary {len(chars)}, {len(train_data)} train / {len(val_data)} validation")

    gen = torch.Generator().manual_seed(args.seed)

    def get_batch(split):
        d = train_data if split == "train" else val_data
        ix = torch.randint(len(d) - args.block_size - 1, (args.batch_size,), generator=gen)
        x = torch.stack([d[i:i + args.block_size] for i in ix.tolist()])
        y = torch.stack([d[i + 1:i + 1 + args.block_size] for i in ix.tolist()])
        return x, y

    GPT = build_gpt(torch)
    model = GPT(len(chars), args.block_size, args.n_layer, args.n_embd, args.n_head, args.dropout)
    print(f"model: {args.n_layer} layers, width {args.n_embd}, {args.n_head} heads, "
          f"{sum(p.numel() for p in model.parameters())} parameters")
    opt = torch.optim.AdamW(model.param_groups(args.weight_decay), lr=args.lr, betas=(0.9, 0.95))
    warmup = args.warmup if args.warmup is not None else max(1, args.steps // 10)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, cosine_with_warmup(warmup, args.steps))

    @torch.no_grad()
    def estimate_val(n_batches=4):
        model.eval()
        losses = [model(*get_batch("val"))[1].item() for _ in range(n_batches)]
        model.train()
        return sum(losses) / len(losses)

    t0 = time.perf_counter()
    model.train()
    for step in range(1, args.steps + 1):
        x, y = get_batch("train")
        _, loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), args.grad_clip)
        opt.step()
        sched.step()
        if step == 1 or step % args.log_every == 0 or step == args.steps:
            dt = time.perf_counter() - t0
            print(f"step {step:5d}/{args.steps}: loss {loss.item():.4f}  grad norm "
                  f"{float(norm):.3f}  lr {sched.get_last_lr()[0]:.2e}  "
                  f"({step / dt:.1f} steps/s)", flush=True)
    train_time = time.perf_counter() - t0
    print(f"validation loss: {estimate_val():.4f} (uniform guess: {math.log(len(chars)):.4f}); "
          f"training took {train_time:.1f} s")

    if args.sample_len > 0:
        model.eval()
        prompt = "".join(c for c in args.prompt if c in stoi) or chars[0]
        idx = torch.tensor([[stoi[c] for c in prompt]], dtype=torch.long)
        out = model.generate(idx, args.sample_len, temperature=args.temperature,
                             top_k=args.top_k, generator=torch.Generator().manual_seed(args.seed))
        print("sample:\n" + "".join(chars[i] for i in out[0].tolist()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
