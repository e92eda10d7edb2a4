"""The Python harness the benches and tests share (standard library only).

Run the scripts that use it as modules from the repository root, e.g.
`python3 -m bench.soak.soak` or `python3 -m tests.lb.loopback_balancers`, and
import what they need: `from bench.harness import processes`.

  processes   starting a process with its output in a log, waiting for it to be
              ready, killing it (or its process group), a registry of every
              process a run started; HarnessError, the harness's failure
  ports       the loopback host, free ports, whether a port accepts connections
  http_client one request on a fresh connection (http.client), JSON POST by URL
  prometheus  parsing a /metrics scrape and reading series out of it
  cpu         CPU time from /proc: per process (and its descendants), the
              machine's, and cores busy over a window
  stats       latency percentiles
  replica     `tokenbatch serve --backend noop` replicas on fixed ports
  balancers   HAProxy and nginx run with deploy/haproxy.cfg and deploy/nginx.conf

Nothing here imports anything heavy: the load client (bench/peers) imports
cpu.py into a process whose own CPU time is measured.
"""
