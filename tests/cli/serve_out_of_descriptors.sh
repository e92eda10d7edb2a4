#!/usr/bin/env bash
# `tokenbatch serve` when idle clients use up its file descriptors: with a
# 64-descriptor limit and 100 idle connections, accepting fails; the server
# says so once, pauses accepting instead of retrying in a busy loop (it stays
# nearly idle on the CPU), keeps its open connections served, and accepts
# again once the read timeout has closed the idle ones.
# Usage: serve_out_of_descriptors.sh TOKENBATCH_BINARY TOKENIZER_JSON
set -euo pipefail
bin="${1:?usage: serve_out_of_descriptors.sh TOKENBATCH_BINARY TOKENIZER_JSON}"
tokenizer="${2:?usage: serve_out_of_descriptors.sh TOKENBATCH_BINARY TOKENIZER_JSON}"
dir="$(mktemp -d)"
server_pid=""
trap '[ -n "$server_pid" ] && kill -9 "$server_pid" 2>/dev/null; rm -rf "$dir"' EXIT

# The limit applies to the server only (bash sets the soft and the hard limit,
# so the server cannot raise it).
( ulimit -n 64; exec "$bin" serve --backend noop --port 0 --tokenizer "$tokenizer" --read-timeout-ms 8000 \
    --log-level info ) 2> "$dir/log" &
server_pid=$!
for _ in $(seq 100); do
  grep -q "listening on" "$dir/log" && break
  sleep 0.1
done
port=$(sed -n 's/.*listening on http:\/\/127.0.0.1:\([0-9]*\).*/\1/p' "$dir/log")
[ -n "$port" ] || { echo "the server did not start"; cat "$dir/log"; exit 1; }

python3 - "$port" "$server_pid" <<'PY'
import os, socket, sys, time

port, pid = int(sys.argv[1]), int(sys.argv[2])

def cpu_seconds():
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime, in clock ticks

def health(sock):
    sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
    reply = sock.recv(4096)
    assert reply.startswith(b"HTTP/1.1 200"), reply

served = socket.create_connection(("127.0.0.1", port))  # accepted before the limit is hit
health(served)
idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(100)]  # the kernel queues past the limit
time.sleep(0.5)
before = cpu_seconds()
time.sleep(1.5)
busy = cpu_seconds() - before
assert busy < 0.5, f"the server used {busy:.2f} s of CPU in 1.5 s while out of descriptors: a busy accept loop"
health(served)  # an open connection is still served
for s in idle:
    s.close()
# The idle connections it accepted close at the read timeout (8 s); then new
# connections are accepted again.
deadline = time.time() + 30
while True:
    try:
        fresh = socket.create_connection(("127.0.0.1", port), timeout=2)
        fresh.settimeout(2)
        health(fresh)
        break
    except (OSError, AssertionError):
        assert time.time() < deadline, "the server never accepted again"
        time.sleep(0.2)
print(f"out of descriptors: {busy:.2f} s CPU in 1.5 s; accepting again")
PY
grep -q "pausing accepts" "$dir/log" || { echo "no log line about the pause"; cat "$dir/log"; exit 1; }
[ "$(grep -c "pausing accepts" "$dir/log")" -le 3 ] || { echo "the pause was logged on every retry"; exit 1; }
kill -TERM "$server_pid"
wait "$server_pid"
server_pid=""
