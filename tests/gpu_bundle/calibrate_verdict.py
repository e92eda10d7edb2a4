"""The GPU bundle's calibrate verdict on the CPU (scripts/gpu/summary.py
calibrated): a recommendation and a refusal for the latency fit are both right,
since the latency fit's quality is the machine's load; any other refusal, a run
that left no file, or one whose file contradicts its exit status or its last
line, is a failure.

    python tests/gpu_bundle/calibrate_verdict.py
"""
import json
import os
import pathlib
import subprocess
import sys
import tempfile

SUMMARY = pathlib.Path(__file__).resolve().parents[2] / "scripts" / "gpu" / "summary.py"
RECOMMENDED = {"sum": 8000, "padded": 6000, "memory": 900000}
REASON = "the latency fit misses the large shape [32, 256] by 66.5% (bound 35%)"
MEMORY_REASON = "the memory fit misses the large shape [32, 256] by 80.0% (bound 25%)"
UNMEASURED_REASON = "only 2 shapes have a measured memory; at least 6 are needed to judge a 3-coefficient fit"


def verdict(tmp, calibration, exit_status, log_lines):
    path = os.path.join(tmp, "calibration.json")
    if calibration is None:
        if os.path.exists(path):
            os.remove(path)
    else:
        with open(path, "w") as f:
            json.dump(calibration, f)
    log = os.path.join(tmp, "calibrate.log")
    with open(log, "w") as f:
        f.write("\n".join(log_lines) + "\n")
    out = subprocess.run([sys.executable, str(SUMMARY), "calibrated", path, str(exit_status), log,
                          os.path.join(tmp, "calibrate.json")], capture_output=True, text=True, check=True)
    return out.stdout.strip().splitlines()[-1]


def main():
    cases = [
        ("a recommendation", {"recommended_max_batch_tokens": RECOMMENDED}, 0, ["calibrate: wrote x.json"], "ok "),
        ("a refusal with its reason", {"refused": REASON}, 1,
         ["calibrate: wrote x.json (without a recommendation)", f"calibrate: no recommendation: {REASON}"], "ok "),
        ("no file", None, 139, ["Segmentation fault"], "FAIL "),
        ("exit 0 without a recommendation", {"refused": REASON}, 0, ["calibrate: wrote x.json"], "FAIL "),
        ("exit 1 with a recommendation", {"recommended_max_batch_tokens": RECOMMENDED}, 1,
         ["calibrate: no recommendation: " + REASON], "FAIL "),
        ("a refusal whose reason is not the one printed", {"refused": REASON}, 1,
         ["calibrate: cannot write x.json"], "FAIL "),
        ("an empty budget", {"recommended_max_batch_tokens": {"sum": 0, "padded": 6000}}, 0, [], "FAIL "),
        # Not the load's doing: a broken peak probe or memory fit must fail the check.
        ("a refusal for the memory fit", {"refused": MEMORY_REASON}, 1,
         [f"calibrate: no recommendation: {MEMORY_REASON}"], "FAIL "),
        ("a refusal for unmeasured peaks", {"refused": UNMEASURED_REASON}, 1,
         [f"calibrate: no recommendation: {UNMEASURED_REASON}"], "FAIL "),
    ]
    with tempfile.TemporaryDirectory() as tmp:
        for name, calibration, status, log, expected in cases:
            got = verdict(tmp, calibration, status, log)
            assert got.startswith(expected), f"{name}: {got!r} does not start with {expected!r}"
    print(f"calibrate_verdict: {len(cases)} cases, 2 right outcomes accepted and {len(cases) - 2} failures refused")


if __name__ == "__main__":
    main()
