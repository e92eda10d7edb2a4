#!/usr/bin/env python3
"""This CPU's float32 GEMM rate and the encoder throughput ceiling it implies.

(a) Measures single-precision GEMM in GFLOP/s (2*M*K*N per product) with numpy
    (its bundled OpenBLAS; thread count set through threadpoolctl) and torch.mm
    (torch.set_num_threads), at 1 and 2 threads, on the encoder's own shapes:
    M = tokens in a batch (--m, e.g. 512..4096) times (K, N) = (H, H), (H, I) and
    (I, H), and on large squares (--square) for the machine's best case. Each case
    is warmed up, then timed over at least --min-time seconds, best of --repeats
    (the best filters out interference from other processes on the cores).
    The "model" rate of a library and thread count is one layer's linear FLOPs
    (4 products H x H, one H x I, one I x H at the largest --m) over the sum of
    their measured times: the mix the encoder actually runs.
(b) FLOPs per token of a BERT-style encoder from the model's config.json
    (H hidden_size, I intermediate_size, N_l num_hidden_layers) at padded
    sequence length L, counting multiply-adds as 2 FLOPs:
        per layer  linear:    2 * (4*H^2 + 2*H*I)   (Q, K, V, output; FFN up and down)
                   attention: 2 * 2 * L * H         (Q K^T scores and the weighted sum of V)
        per token  N_l * (linear + attention)
    This is the per-token form of the accounting in Hoffmann et al. 2022,
    "Training Compute-Optimal Large Language Models", Appendix F (attention
    logits and attention reduction each 2*L*H per token; the dense layers 2 FLOPs
    per weight). Embeddings, softmax, layer norms, GELU and pooling are left
    out: elementwise work, small next to the products.
    The ceiling is GFLOP/s / FLOPs-per-token: no implementation on these cores at
    that GEMM rate computes more tokens per second (the attention products, being
    small per head, run slower than the rate used, so the real bound is lower).
Prints a table (tokens/s for L in --lengths) and then the same data as JSON.
Numbers depend on the machine being otherwise idle.

On some processors the environment sets OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE,
which select an older OpenBLAS kernel; to measure numpy's real kernel unset both
in this command alone (the report shows the kernel threadpoolctl sees):
  env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE build/peers-venv/bin/python \\
      bench/peers/gemm_ceiling.py [--quick] [--json-only]
"""
import argparse
import json
import os
import pathlib
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]


def timed_rate(fn, flops, min_time, repeats):
    fn()  # warm-up: first-call allocation and thread start-up
    best = 0.0
    for _ in range(repeats):
        n, t0 = 0, time.perf_counter()
        while True:
            fn()
            n += 1
            dt = time.perf_counter() - t0
            if dt >= min_time:
                break
        best = max(best, flops * n / dt / 1e9)
    return best


def gemm_cases(m_list, h, inter, squares):
    cases = []
    for m in m_list:
        for k, n in ((h, h), (h, inter), (inter, h)):
            cases.append(("model", m, k, n))
    for s in squares:
        cases.append(("square", s, s, s))
    return cases


def measure(lib, threads, cases, min_time, repeats):
    import numpy as np
    rows = []
    if lib == "numpy":
        from threadpoolctl import threadpool_limits
        ctx = threadpool_limits(limits=threads, user_api="blas")
    else:
        import torch
        torch.set_num_threads(threads)
        ctx = torch.inference_mode()
    with ctx:
        for kind, m, k, n in cases:
            rng = np.random.default_rng(0)
            a = rng.standard_normal((m, k), dtype=np.float32)
            b = rng.standard_normal((k, n), dtype=np.float32)
            if lib == "numpy":
                out = np.empty((m, n), np.float32)
                fn = lambda: np.matmul(a, b, out=out)  # noqa: E731
            else:
                import torch
                ta, tb = torch.from_numpy(a), torch.from_numpy(b)
                tout = torch.empty((m, n), dtype=torch.float32)
                fn = lambda: torch.mm(ta, tb, out=tout)  # noqa: E731
            rate = timed_rate(fn, 2.0 * m * k * n, min_time, repeats)
            rows.append({"lib": lib, "threads": threads, "kind": kind, "m": m, "k": k, "n": n,
                         "gflops": round(rate, 2)})
    return rows


def model_rate(rows, lib, threads, m, h, inter):
    """One layer's linear FLOPs over the time its six products take at this M."""
    rate = {(r["k"], r["n"]): r["gflops"] for r in rows
            if r["lib"] == lib and r["threads"] == threads and r["kind"] == "model" and r["m"] == m}
    parts = [(4, h, h), (1, h, inter), (1, inter, h)]
    flops = sum(c * 2.0 * m * k * n for c, k, n in parts)
    secs = sum(c * 2.0 * m * k * n / (rate[(k, n)] * 1e9) for c, k, n in parts)
    return flops / secs / 1e9


def flops_per_token(h, inter, layers, length):
    linear = 2 * (4 * h * h + 2 * h * inter)
    attention = 2 * 2 * length * h
    return layers * (linear + attention)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model-dir", default=str(ROOT / "build/cache/models/all-MiniLM-L6-v2"))
    ap.add_argument("--m", type=int, nargs="+", default=[512, 1024, 2048, 4096],
                    help="tokens in a batch (rows of the activations)")
    ap.add_argument("--square", type=int, nargs="+", default=[1024, 2048])
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--libs", nargs="+", default=["numpy", "torch"], choices=["numpy", "torch"])
    ap.add_argument("--lengths", type=int, nargs="+", default=[16, 32, 64, 128, 256, 512])
    ap.add_argument("--min-time", type=float, default=0.2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="one M (2048), one square (1024), short timings")
    ap.add_argument("--json-only", action="store_true")
    args = ap.parse_args()
    if args.quick:
        args.m, args.square, args.min_time, args.repeats = [2048], [1024], 0.1, 2

    with open(pathlib.Path(args.model_dir) / "config.json") as f:
        cfg = json.load(f)
    h, inter, layers = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_hidden_layers"]

    cases = gemm_cases(args.m, h, inter, args.square)
    rows = []
    for lib in args.libs:
        for t in args.threads:
            rows += measure(lib, t, cases, args.min_time, args.repeats)

    m_ref = max(args.m)
    rates = {}
    for lib in args.libs:
        for t in args.threads:
            sq = max(r["gflops"] for r in rows if r["lib"] == lib and r["threads"] == t and r["kind"] == "square")
            rates[f"{lib}-{t}t"] = {"model": round(model_rate(rows, lib, t, m_ref, h, inter), 2),
                                    "square_best": sq}
    ceiling = []
    for length in args.lengths:
        fpt = flops_per_token(h, inter, layers, length)
        row = {"len": length, "flops_per_token": fpt}
        for key, r in rates.items():
            row[key] = round(r["model"] * 1e9 / fpt)
            row[key + "-square"] = round(r["square_best"] * 1e9 / fpt)
        ceiling.append(row)

    from threadpoolctl import threadpool_info
    import numpy as np
    import torch
    blas = [{k: i.get(k) for k in ("internal_api", "version", "architecture", "num_threads")}
            for i in threadpool_info() if i.get("user_api") == "blas"]
    report = {
        "model": {"hidden": h, "intermediate": inter, "layers": layers, "model_rate_m": m_ref},
        "env": {k: os.environ.get(k) for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")},
        "numpy": np.__version__, "numpy_blas": blas,
        "torch": torch.__version__, "torch_mkl": torch.backends.mkl.is_available(),
        "gemm": rows, "rates_gflops": rates, "ceiling_tokens_per_s": ceiling,
    }
    if not args.json_only:
        print("GEMM GFLOP/s (model: one layer's linear mix at M=%d; square: best large square)" % m_ref)
        for key, r in rates.items():
            print(f"  {key:10s} model {r['model']:8.1f}   square {r['square_best']:8.1f}")
        keys = list(rates)
        print("\nceiling tokens/s = model-mix GFLOP/s / FLOPs per token")
        print(f"{'L':>5} {'MFLOP/tok':>10} " + " ".join(f"{k:>10}" for k in keys))
        for row in ceiling:
            print(f"{row['len']:>5} {row['flops_per_token'] / 1e6:>10.2f} "
                  + " ".join(f"{row[k]:>10}" for k in keys))
        print()
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
