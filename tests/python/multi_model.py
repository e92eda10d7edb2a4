"""Several models in one `tokenbatch serve`, on one device memory budget.

    multi_model.py TOKENBATCH EMBED_DIR RERANK_DIR SPARSE_DIR

An embedder, a cross-encoder and a sparse model (small random-weight
directories) are served by one process with --device-memory. Each model's
bytes per batch come from a calibration written by `tokenbatch calibrate
--from-json` from a grid whose peaks follow a known formula, so that one large
batch of a model fits the device and two models' large batches together do
not. Checked:
  - the budget: client threads send interleaved large requests to the three
    models at once; every request is answered 200, the shared device's peak of
    bytes in flight (/metrics) stays within --device-memory, and models had to
    wait for each other (so the budget, not luck, kept the peak under it);
  - routing: each model's answers equal a server of that model alone; an
    unknown `model` is 404 listing the names; a route of another kind is 400
    naming the model; /v1/models and /info list all three;
  - per-model metrics: queue, batches, padding efficiency and errors carry the
    model's label, and the balancer weight is one number for the replica;
  - refusals at start, each with a clear message and a non-zero exit: two models
    with one name, a model directory that fails to load, memory models that do
    not fit the limit together, --device-memory without a calibration, and a
    calibration given for another model or layout (its fingerprint differs).
"""
import json
import os
import subprocess
import sys
import tempfile
import threading
import urllib.request

from rerank_parity import corpus
from serving import Serving, post_json

LIMIT = 200_000_000  # --device-memory, bytes
MAX_INPUT = 128      # tokens; each model's calibration and limit
# bytes = C0 + C1·B·L: 1 MB fixed and 20 KB per padded token; one batch of 64
# rows of 128 tokens takes 165 MB, two take more than LIMIT.
C0, C1 = 1_000_000, 20_000


def fingerprint(binary, tmp, model_dir):
    """The fingerprint `tokenbatch calibrate` records of `model_dir` measured as this
    test serves it (one thread; the build's attention kernel), from a real run on
    a small grid (whether it recommends or refuses, it writes the file)."""
    out = os.path.join(tmp, os.path.basename(os.path.normpath(model_dir)) + ".measured.json")
    subprocess.run([binary, "calibrate", "--model-id", model_dir, "--threads", "1", "--memory-limit", "1GB",
                    "--grid", "1,2,4:8,16,32", "--repeats", "1", "--json", out],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=300)
    with open(out) as f:
        found = json.load(f)["fingerprint"]
    with open(os.path.join(model_dir, "config.json")) as f:
        config = json.load(f)
    assert found["architecture"] == config["model_type"] and found["hidden_size"] == config["hidden_size"], found
    return found


def calibration(binary, tmp, name, model_dir):
    """A checked calibration file for `model_dir` from a grid whose peaks follow C0 + C1·B·L."""
    grid = [{"batch_size": b, "seq_len": l, "latency_us": 500 + 2.0 * b * l, "peak_bytes": C0 + C1 * b * l}
            for b in (1, 2, 4, 8, 16, 32, 64) for l in (16, 32, 64, 128)]
    measured = {"model": {"name": name, "path": name, "max_positions": 512}, "device": "cpu", "pooling": "cls",
                "threads": 1, "loaded_process_bytes": 100_000_000, "model_load_bytes": 50_000_000, "grid": grid,
                "fingerprint": fingerprint(binary, tmp, model_dir)}
    source, out = os.path.join(tmp, f"{name}.grid.json"), os.path.join(tmp, f"{name}.json")
    with open(source, "w") as f:
        json.dump(measured, f)
    subprocess.run([binary, "calibrate", "--from-json", source, "--memory-limit", "1GB", "--max-input-tokens",
                    str(MAX_INPUT), "--max-batch-size", "64", "--json", out], check=True, stdout=subprocess.DEVNULL)
    return out


def get(port, path):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=60) as r:
        return r.read().decode()


def metric(text, name, **labels):
    """The value of the series `name` whose labels include `labels`."""
    total, found = 0.0, False
    for line in text.splitlines():
        if line.startswith(name + "{") or line.startswith(name + " "):
            series, value = line.rsplit(" ", 1)
            if all(f'{k}="{v}"' in series for k, v in labels.items()):
                total, found = total + float(value), True
    assert found, f"no series {name} {labels}"
    return total


def max_difference(a, b):
    """The largest |difference| of two answers of the same shape (batches
    differ with the load, and float sums with the batch); inf when a key, an
    index or the shape differs."""
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return float("inf")
        return max([max_difference(a[k], b[k]) for k in a] or [0.0])
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return float("inf")
        return max([max_difference(x, y) for x, y in zip(a, b)] or [0.0])
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return abs(a - b)
    return 0.0 if a == b else float("inf")


def refused(binary, args, expected):
    r = subprocess.run([binary, "serve", "--port", "0", *args], capture_output=True, text=True, timeout=120)
    assert r.returncode != 0, f"serve {args} started"
    assert expected in r.stderr, f"serve {args}: {r.stderr!r} lacks {expected!r}"


def load(port, texts, names):
    """Interleaved large requests: a thread per model and request kind."""
    failures = []

    def embed():
        for i in range(6):
            s, r = post_json(port, "/v1/embeddings", {"model": names[0], "input": texts[i * 64:(i + 1) * 64]})
            if s != 200:
                failures.append(("embed", s, r))

    def rerank():
        for i in range(6):
            s, r = post_json(port, "/v1/rerank", {"model": names[1], "query": texts[i], "documents": texts[64 * i:64 * i + 64]})
            if s != 200:
                failures.append(("rerank", s, r))

    def sparse():
        for i in range(6):
            s, r = post_json(port, "/embed_sparse", {"model": names[2], "inputs": texts[64 * i:64 * i + 64], "top_k": 16})
            if s != 200:
                failures.append(("sparse", s, r))

    threads = [threading.Thread(target=f) for f in (embed, rerank, sparse, embed, rerank, sparse)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures[:3]


def main():
    binary, embed_dir, rerank_dir, sparse_dir = sys.argv[1:5]
    names = ["embed", "rerank", "sparse"]
    texts = [t for t in corpus() if len(t) > 200]
    texts = (texts * (384 // len(texts) + 1))[:384]
    with tempfile.TemporaryDirectory() as tmp:
        calibrations = [calibration(binary, tmp, n, d) for n, d in zip(names, (embed_dir, rerank_dir, sparse_dir))]
        common = ["--threads", "1", "--max-batch-requests", "64", "--max-input-tokens", str(MAX_INPUT)]
        per_model = []
        for d, n, c in zip((embed_dir, rerank_dir, sparse_dir), names, calibrations):
            per_model += ["--model-id", d, "--served-model-name", n, "--calibration", c]
        args = per_model + common + ["--device-memory", str(LIMIT), "--device-memory-weight", "2",
                                     "--device-memory-weight", "1", "--device-memory-weight", "1"]
        probe = texts[:8]
        with Serving(binary, args) as port:
            load(port, texts, names)
            m = get(port, "/metrics")
            peak = metric(m, "tokenbatch_device_memory_peak_in_flight_bytes")
            waits = sum(metric(m, "tokenbatch_device_memory_waits_total", model=n) for n in names)
            assert 0 < peak <= LIMIT, f"peak in flight {peak} bytes, limit {LIMIT}"
            assert waits > 0, "no model ever waited: the load did not make the models contend"
            for n in names:
                assert metric(m, "tokenbatch_batches_total", model=n) > 0, n
                metric(m, "tokenbatch_batch_padding_efficiency_count", model=n)
                metric(m, "tokenbatch_queue_size", model=n)
                assert metric(m, "tokenbatch_device_memory_in_flight_bytes", model=n) == 0, n
            metric(m, "tokenbatch_lb_weight_percent")
            # Routing, kinds and listings.
            s, r = post_json(port, "/v1/embeddings", {"model": "nope", "input": "a"})
            assert s == 404 and "the models served are: embed, rerank, sparse" in r["error"]["message"], r
            s, r = post_json(port, "/v1/embeddings", {"model": "rerank", "input": "a"})
            assert s == 400 and 'model "rerank" is a cross-encoder' in r["error"]["message"], r
            s, r = post_json(port, "/embed", {"model": "sparse", "inputs": "a"})
            assert s == 400 and "/embed_sparse" in r["error"], r
            s, r = post_json(port, "/predict", {"inputs": "a"})  # the default model, the embedder
            assert s == 400 and 'model "embed" is an embedding model' in r["error"], r
            models = json.loads(get(port, "/v1/models"))
            assert [d["id"] for d in models["data"]] == names, models
            info = json.loads(get(port, "/info"))
            assert info["model_id"] == "embed" and [x["model_id"] for x in info["models"]] == names, info
            assert info["device_memory_limit_bytes"] == LIMIT and info["models"][0]["device_memory"]["weight"] == 2
            s, got_embed = post_json(port, "/embed", {"model": "embed", "inputs": probe})
            s2, got_rerank = post_json(port, "/rerank", {"model": "rerank", "query": probe[0], "texts": probe,
                                                         "raw_scores": True})
            s3, got_sparse = post_json(port, "/embed_sparse", {"model": "sparse", "inputs": probe})
            assert (s, s2, s3) == (200, 200, 200)
        # Each model alone answers the same.
        for d, path, body, got in ((embed_dir, "/embed", {"inputs": probe}, got_embed),
                                   (rerank_dir, "/rerank", {"query": probe[0], "texts": probe, "raw_scores": True},
                                    got_rerank),
                                   (sparse_dir, "/embed_sparse", {"inputs": probe}, got_sparse)):
            with Serving(binary, ["--model-id", d, *common]) as port:
                s, alone = post_json(port, path, body)
                assert s == 200, alone
                diff = max_difference(alone, got)
                assert diff <= 1e-5, f"{d}: served with the others, {path} differs from alone by {diff:.2e}"
        # Refusals at start.
        refused(binary, ["--model-id", embed_dir, "--model-id", embed_dir],
                "two models are named \"" + os.path.basename(os.path.normpath(embed_dir)) + "\"")
        broken = os.path.join(tmp, "broken")
        os.makedirs(broken)
        with open(os.path.join(broken, "config.json"), "w") as f:
            f.write('{"model_type": "bert", "hidden_size": "wide"}')
        refused(binary, ["--model-id", embed_dir, "--model-id", broken], "model 2 of 2: --model-id " + broken)
        refused(binary, per_model + common + ["--device-memory", "100MB", "--device-memory-guaranteed", "0",
                                              "--device-memory-guaranteed", "98MB", "--device-memory-guaranteed", "0"],
                "the memory models do not fit the limit together: model embed's longest input alone needs")
        refused(binary, ["--model-id", embed_dir, "--model-id", rerank_dir, "--device-memory", "1GB"],
                "has no --calibration")
        # A calibration is refused for a model or a layout it was not measured
        # on: its fingerprint names the first field that differs.
        other = os.path.join(os.path.dirname(os.path.normpath(embed_dir)), "xlm-roberta")
        refused(binary, ["--model-id", other, "--calibration", calibrations[0], *common],
                f"--calibration {calibrations[0]} was measured on architecture bert, and the model served has "
                "xlm-roberta")
        refused(binary, ["--model-id", embed_dir, "--calibration", calibrations[0], "--execution", "padded", *common],
                f"--calibration {calibrations[0]} was measured on execution packed, and the model served has padded")
    print(f"multi_model: 3 models on {LIMIT} bytes, peak in flight {int(peak)} bytes, {int(waits)} waits; "
          "answers equal each model served alone; 6 refusals")


if __name__ == "__main__":
    main()
