"""The GPU checks' verdicts and their JSON (gpu_check.sh). Each verdict command
prints one line, "ok DETAIL" or "FAIL DETAIL", and writes its figures as JSON.

    summary.py record RECORDS NAME STATUS DETAIL [FIGURES_JSON]
    summary.py report RECORDS OUT_JSON DEVICE TORCH ELAPSED_S
    summary.py budget CALIBRATION_JSON [OUT_JSON] prints the recommended padded budget
    summary.py calibrated CALIBRATION_JSON EXIT_STATUS LOG OUT_JSON
    summary.py oom BENCH_JSON OUT_JSON
    summary.py memory BENCH_BATCHES_JSONL LIMIT OUT_JSON
    summary.py simulator BENCH_JSON SIMULATE_JSON OUT_JSON

Only the standard library: it runs with the GPU machine's own Python.
"""
import json
import os
import re
import sys

BUDGET_POLICY = "ours-length-aware"
COUNT_POLICY = "fixed-32"


def by_policy(path):
    with open(path) as f:
        return {r["policy"]: r for r in json.load(f)}


def write(path, figures):
    with open(path, "w") as f:
        json.dump(figures, f, indent=2)


def parse_bytes(text):
    """'24GB' (10^9), '24GiB' (2^30), or a plain count of bytes, as the CLI reads them."""
    m = re.fullmatch(r"\s*([0-9.]+)\s*([kKmMgGtT]?)(i?)[bB]?\s*", text)
    if not m:
        raise SystemExit(f"summary: cannot read the size {text!r}")
    power = " kmgt".index(m.group(2).lower() or " ")
    return int(float(m.group(1)) * (1024 if m.group(3) else 1000) ** power)


def record(records, name, status, detail, figures_path=""):
    figures = None
    if figures_path and os.path.exists(figures_path):
        with open(figures_path) as f:
            figures = json.load(f)
    with open(records, "a") as f:
        f.write(json.dumps({"check": name, "status": status, "detail": detail, "figures": figures}) + "\n")


def report(records, out, device, torch_version, elapsed):
    with open(records) as f:
        checks = [json.loads(line) for line in f if line.strip()]
    write(out, {"device": device, "torch": torch_version, "elapsed_s": int(elapsed),
                "passed": bool(checks) and all(c["status"] == "ok" for c in checks), "checks": checks})


def budget(calibration, out=""):
    with open(calibration) as f:
        c = json.load(f)
    if "recommended_max_batch_tokens" not in c:
        raise SystemExit(f"summary: {calibration} has no recommendation: {c.get('refused', 'no reason given')}")
    padded = c["recommended_max_batch_tokens"]["padded"]
    if out:
        write(out, {"recommended_max_batch_tokens": c["recommended_max_batch_tokens"],
                    "memory_limit_bytes": c.get("memory_limit_bytes"), "calibration": calibration})
    print(padded)


def calibrated(calibration, exit_status, log, out):
    """Calibrate's verdict where the latency fit's quality is the machine's load,
    not the code's: a recommendation (exit 0) and a refusal for the latency fit
    (exit 1, the file without a recommendation, the reason as the last line of
    the log) are both right. Any other refusal (peaks not measured, the memory
    fit, no budget), a crash, a missing file, or a file that contradicts the exit
    status is not."""
    status = int(exit_status)
    try:
        with open(calibration) as f:
            c = json.load(f)
    except (OSError, ValueError) as e:
        print(f"FAIL calibrate exited {status} and left no calibration file to read: {e} (log: {log})")
        return
    with open(log, errors="replace") as f:
        lines = [line.strip() for line in f if line.strip()]
    last = lines[-1] if lines else ""
    refused, recommended = c.get("refused", ""), c.get("recommended_max_batch_tokens")
    figures = {"exit_status": status, "recommended_max_batch_tokens": recommended, "refused": refused or None,
               "latency_fit": c.get("fit", {}).get("latency"), "calibration": calibration}
    write(out, figures)
    if status == 0 and not refused and recommended and all(recommended.get(k, 0) > 0 for k in ("sum", "padded")):
        print(f"ok recommended max_batch_tokens sum {recommended['sum']}, padded {recommended['padded']}")
    elif (status == 1 and refused.startswith("the latency fit misses") and not recommended
          and last.endswith("no recommendation: " + refused)):
        print(f"ok refused with its reason (the fit's quality is this machine's load): {refused}")
    else:
        print(f"FAIL calibrate exited {status} with recommendation {recommended} and refusal {refused!r}; "
              f"its last line: {last} (log: {log})")


def oom(bench, out):
    rows = by_policy(bench)
    fixed, ours = rows[COUNT_POLICY], rows[BUDGET_POLICY]
    figures = {p: {k: rows[p][k] for k in ("oom_events", "tokens_per_s", "requests_lost", "peak_memory_bytes")}
               for p in (COUNT_POLICY, BUDGET_POLICY)}
    write(out, figures)
    ok = fixed["oom_events"] > 0 and ours["oom_events"] == 0 and ours["requests_lost"] == 0
    print(("ok" if ok else "FAIL") + f" {COUNT_POLICY}: {fixed['oom_events']} CUDA OOM events; calibrated budget: "
          f"{ours['oom_events']}, {ours['requests_lost']} lost (expected > 0, and 0 and 0)")


def memory(batches, limit, out):
    cap = parse_bytes(limit)
    with open(batches) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    ours = [r for r in rows if r["policy"] == BUDGET_POLICY]
    peaks = [r["peak_bytes"] for r in ours]
    over = sum(p > cap for p in peaks)
    figures = {"cap_bytes": cap, "batches": len(ours), "max_peak_bytes": max(peaks, default=0),
               "max_peak_fraction_of_cap": round(max(peaks, default=0) / cap, 4), "batches_over_cap": over,
               "unmeasured_batches": sum(p <= 0 for p in peaks),
               "per_batch": [{"size": r["size"], "max_tokens": r["max_tokens"], "cost": r["cost"],
                              "peak_bytes": r["peak_bytes"]} for r in ours]}
    write(out, figures)
    ok = ours and over == 0 and figures["unmeasured_batches"] == 0 and not any(r["oom"] for r in ours)
    print(("ok" if ok else "FAIL") + f" {len(ours)} budgeted batches, largest peak {max(peaks, default=0) / 2**30:.2f} "
          f"GiB = {figures['max_peak_fraction_of_cap']:.0%} of the {limit} cap, {over} over it")


def simulator(bench, simulate, out):
    measured, predicted = by_policy(bench), by_policy(simulate)
    figures, agree = {}, True
    for p in (COUNT_POLICY, BUDGET_POLICY):
        m, s = measured[p], predicted[p]
        figures[p] = {"measured_tokens_per_s": m["tokens_per_s"], "predicted_tokens_per_s": s["tokens_per_s"],
                      "predicted_over_measured": round(s["tokens_per_s"] / m["tokens_per_s"], 3)
                      if m["tokens_per_s"] else None,
                      "measured_oom_events": m["oom_events"], "predicted_oom_events": s["oom_events"]}
        agree &= (m["oom_events"] > 0) == (s["oom_events"] > 0)
    write(out, figures)
    b = figures[BUDGET_POLICY]
    print(("ok" if agree else "FAIL") + f" {BUDGET_POLICY}: predicted {b['predicted_tokens_per_s']:.0f} tokens/s, "
          f"measured {b['measured_tokens_per_s']:.0f} ({b['predicted_over_measured']}x); OOMs predicted / measured: "
          + ", ".join(f"{p} {figures[p]['predicted_oom_events']} / {figures[p]['measured_oom_events']}"
                      for p in figures))


if __name__ == "__main__":
    commands = {"record": record, "report": report, "budget": budget, "calibrated": calibrated, "oom": oom,
                "memory": memory, "simulator": simulator}
    if len(sys.argv) < 2 or sys.argv[1] not in commands:
        raise SystemExit(__doc__)
    commands[sys.argv[1]](*sys.argv[2:])
