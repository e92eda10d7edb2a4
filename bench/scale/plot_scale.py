#!/usr/bin/env python3
"""PNG plots (gnuplot) of bench/scale/run_scale.py's summary.

Writes into OUT_DIR:
  scale_throughput.png  closed-loop inputs/s against replicas, one line per
                        balancer and policy, with the direct one-replica figure
                        times the replica count (linear scaling) dashed;
  scale_short_p99.png   the short requests' open-loop p99 per balancer and
                        policy, one bar per replica count;
  scale_slow.png        the slow-replica case: closed-loop inputs/s and the
                        open-loop short p99 per policy.
The .dat and .gp files they are drawn from go to DATA_DIR (default: the
summary's directory).

Usage: python3 bench/scale/plot_scale.py build/scale/scale.json docs/plots [DATA_DIR]
"""
import json
import pathlib
import subprocess
import sys

LABELS = {
    "direct": "direct (no balancer)",
    "haproxy-rr": "HAProxy roundrobin",
    "haproxy-leastconn": "HAProxy leastconn",
    "haproxy-rr-agent": "HAProxy roundrobin + agent",
    "haproxy-leastconn-agent": "HAProxy leastconn + agent",
    "nginx-rr": "nginx round-robin",
    "nginx-leastconn": "nginx least_conn",
}


def label(config):
    return LABELS.get(config, config)


def main():
    summary = json.loads(pathlib.Path(sys.argv[1]).read_text())
    out = pathlib.Path(sys.argv[2])
    data = pathlib.Path(sys.argv[3]) if len(sys.argv) > 3 else pathlib.Path(sys.argv[1]).parent
    out.mkdir(parents=True, exist_ok=True)
    data.mkdir(parents=True, exist_ok=True)
    s = summary["settings"]
    what = (f"noop replicas sleeping {s['delay_us'] / 1000:g} ms per batch of <= {s['batch_requests']} inputs, "
            f"seed mix, {summary['machine']['nproc']} cores shared")
    scripts = {}

    points = summary.get("points", [])
    if points:
        cap1 = summary["capacity_1_replica"]
        counts = sorted({p["replicas"] for p in points})
        configs = [c for c in dict.fromkeys(p["config"] for p in points) if c != "direct"]
        blocks = []
        for c in configs:
            rows = [f"# {c}: replicas inputs_per_s"]
            rows += [f"{p['replicas']} {p['closed']['inputs_per_s']}"
                     for p in sorted(points, key=lambda p: p["replicas"]) if p["config"] == c]
            blocks.append("\n".join(rows))
        blocks.append("\n".join(["# linear: replicas x direct one-replica inputs/s"]
                                + [f"{n} {n * cap1}" for n in counts]))
        (data / "scale_throughput.dat").write_text("\n\n\n".join(blocks) + "\n")
        titles = " ".join(f'"{label(c)}"' for c in configs)
        scripts["scale_throughput"] = f"""set terminal pngcairo size 800,500
set output '{out}/scale_throughput.png'
set title "Closed-loop throughput against replicas\\n{what}" noenhanced
titles = '{titles}'
set xlabel 'replicas'
set ylabel 'inputs/s'
set xtics 1
set xrange [0.8:{max(counts) + 0.2}]
set yrange [0:*]
set key top left noenhanced
plot for [i=0:{len(configs) - 1}] '{data}/scale_throughput.dat' index i using 1:2 with linespoints lw 2 title word(titles, i + 1), \\
     '{data}/scale_throughput.dat' index {len(configs)} using 1:2 with lines dt 2 lc rgb 'black' title 'linear (replicas x direct)'
"""
        rows = ["# config " + " ".join(f"p99_{n}" for n in counts)]
        for c in ["direct"] + configs:
            vals = []
            for n in counts:
                p = next((p for p in points if p["config"] == c and p["replicas"] == n), None)
                vals.append(str(p["open"]["latency_ms"]["short"].get("p99_ms", "-")) if p else "-")
            rows.append(f'"{label(c)}" ' + " ".join(vals))
        (data / "scale_short_p99.dat").write_text("\n".join(rows) + "\n")
        cols = ", ".join(
            (f"'{data}/scale_short_p99.dat' using {i + 2}:xtic(1) title '{n} replica{'s' if n > 1 else ''}'"
             if i == 0 else f"'' using {i + 2} title '{n} replicas'") for i, n in enumerate(counts))
        scripts["scale_short_p99"] = f"""set terminal pngcairo size 900,500
set output '{out}/scale_short_p99.png'
set title "Short requests' p99, open loop at {s['load_fraction']:g} x replicas x the direct one-replica capacity\\n{what}" noenhanced
set datafile missing '-'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set boxwidth 0.9
set ylabel 'short p99, ms'
set yrange [0:*]
set xtics rotate by -20 noenhanced
set key above horizontal
set bmargin 5
plot {cols}
"""

    slow = summary.get("slow_case")
    if slow and slow.get("cases"):
        rows = ["# config closed_inputs_per_s open_short_p99_ms"]
        for c in slow["cases"]:
            rows.append(f'"{label(c["config"])}" {c["closed"]["inputs_per_s"]} '
                        f'{c["open"]["latency_ms"]["short"].get("p99_ms", "-")}')
        (data / "scale_slow.dat").write_text("\n".join(rows) + "\n")
        scripts["scale_slow"] = f"""set terminal pngcairo size 1100,460
set output '{out}/scale_slow.png'
set multiplot layout 1,2 title "3 replicas, one sleeping {slow['slow_delay_us'] / 1000:g} ms per batch (the others {s['delay_us'] / 1000:g} ms), seed mix" noenhanced
set datafile missing '-'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set boxwidth 0.8
set xtics rotate by -25 noenhanced
set bmargin 6
set yrange [0:*]
set title "closed loop: inputs/s (dashed: the replicas' capacities summed)" noenhanced
set ylabel 'inputs/s'
set arrow 1 from graph 0, first {slow['capacity_sum']} to graph 1, first {slow['capacity_sum']} nohead dt 2
plot '{data}/scale_slow.dat' using 2:xtic(1) notitle lc rgb '#4477aa'
unset arrow 1
set title 'open loop at {s['load_fraction']:g} x that capacity: short p99' noenhanced
set ylabel 'short p99, ms'
set logscale y
set yrange [10:*]
plot '{data}/scale_slow.dat' using 3:xtic(1) notitle lc rgb '#cc6677'
unset multiplot
"""

    for name, text in scripts.items():
        gp = data / f"{name}.gp"
        gp.write_text(text)
        subprocess.run(["gnuplot", str(gp)], check=True)
        print(out / f"{name}.png")


if __name__ == "__main__":
    main()
