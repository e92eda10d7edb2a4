#!/usr/bin/python3
"""The reference for encoder_bench: python3-torch running the same TorchScript file
on the same shapes, with the same padding-free batch, mean pooling and thread
count, under torch.inference_mode. Prints JSON {"B,L": milliseconds per batch}
(the median of the timed runs).

Usage: /usr/bin/python3 bench/backend/python_reference.py MODEL.pt THREADS
"""
import json
import statistics
import sys
import time

import torch

SHAPES = [(1, 128), (8, 128), (32, 128), (8, 512)]  # keep in sync with encoder_bench.cc


def main() -> None:
    model_path, threads = sys.argv[1], int(sys.argv[2])
    torch.set_num_threads(threads)
    model = torch.jit.load(model_path).eval()
    g = torch.Generator().manual_seed(7)
    out = {}
    with torch.inference_mode():
        for b, l in SHAPES:
            ids = torch.randint(1000, 20000, (b, l), generator=g)
            mask = torch.ones_like(ids)

            def run():
                h = model(ids, mask)
                m = mask.unsqueeze(-1).to(h.dtype)
                pooled = (h * m).sum(1) / m.sum(1)
                return pooled.tolist()

            run()  # warm-up, as encoder_bench does
            times = []
            start = time.perf_counter()
            while len(times) < 3 or time.perf_counter() - start < 3.0:
                t0 = time.perf_counter()
                run()
                times.append(time.perf_counter() - t0)
            out[f"{b},{l}"] = 1000 * statistics.median(times)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
