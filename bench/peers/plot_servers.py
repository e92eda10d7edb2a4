#!/usr/bin/env python3
"""PNG plots (gnuplot) of bench/peers/compare_servers.sh's results.

Writes into OUT_DIR: servers_closed.png (requests/s and overall p99 against
closed-loop connections, log x, one line per server) and servers_open.png (short
and long p99 against the Poisson rate, per server), with the .dat and .gp files
they are drawn from.

Usage: python3 bench/peers/plot_servers.py build/peers-cache/servers.jsonl OUT_DIR
"""
import json
import pathlib
import subprocess
import sys


def main():
    rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
    out = pathlib.Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    servers = sorted({r["server"] for r in rows})
    blocks = {"closed": [], "open": []}
    for mode in blocks:
        for s in servers:
            pts = sorted((r for r in rows if r["server"] == s and r["mode"] == mode), key=lambda r: r["load"])
            lines = [f"# {s}: load requests_per_s p99_ms short_p99_ms long_p99_ms"]
            for r in pts:
                lat = r["latency"]
                lines.append(f"{r['load']} {r['requests_per_s']} {lat['overall'].get('p99_ms', 0)} "
                             f"{lat['short'].get('p99_ms', 0)} {lat['long'].get('p99_ms', 0)}")
            blocks[mode].append("\n".join(lines))
        (out / f"servers_{mode}.dat").write_text("\n\n\n".join(blocks[mode]) + "\n")
    closed = f"""set terminal pngcairo noenhanced size 1000,420
names = '{" ".join(servers)}'
set output '{out}/servers_closed.png'
set multiplot layout 1,2 title 'all-MiniLM-L6-v2 on this CPU, seed mix, closed loop'
set logscale x 2
set xlabel 'connections'
set key top left
set ylabel 'requests/s'
plot for [i=0:{len(servers) - 1}] '{out}/servers_closed.dat' index i using 1:2 with linespoints title word(names, i + 1)
set ylabel 'p99 latency, ms'
set logscale y
plot for [i=0:{len(servers) - 1}] '{out}/servers_closed.dat' index i using 1:3 with linespoints notitle
unset multiplot
"""
    opened = f"""set terminal pngcairo noenhanced size 1000,420
names = '{" ".join(servers)}'
set output '{out}/servers_open.png'
set multiplot layout 1,2 title 'all-MiniLM-L6-v2 on this CPU, seed mix, open loop (Poisson)'
set xlabel 'offered requests/s'
set key top left
set ylabel 'short requests p99, ms'
plot for [i=0:{len(servers) - 1}] '{out}/servers_open.dat' index i using 1:4 with linespoints title word(names, i + 1)
set ylabel 'long requests p99, ms'
plot for [i=0:{len(servers) - 1}] '{out}/servers_open.dat' index i using 1:5 with linespoints notitle
unset multiplot
"""
    for name, text in (("servers_closed.gp", closed), ("servers_open.gp", opened)):
        (out / name).write_text(text)
        subprocess.run(["gnuplot", str(out / name)], check=True)


if __name__ == "__main__":
    main()
