"""Loopback ports: free ones to give servers, and whether one accepts connections."""

from __future__ import annotations

import os
import random
import socket
import time

from bench.harness.processes import HarnessError

HOST = "127.0.0.1"


def free_ports(n: int) -> list[int]:
    """`n` distinct loopback ports that were free when checked (by binding them).

    They lie below the kernel's ephemeral range (/proc/sys/net/ipv4/ip_local_port_range),
    so that no outgoing connection, of a balancer say, can take a server's port
    while that server is down. Raises HarnessError when `n` cannot be found.
    """
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    rng = random.Random(os.getpid() ^ time.time_ns())
    ports: list[int] = []
    for _ in range(2000):
        if len(ports) == n:
            return ports
        p = rng.randrange(20000, low) if low > 21000 else 0
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            s.bind((HOST, p))
            p = s.getsockname()[1]
            if p not in ports:
                ports.append(p)
        except OSError:
            pass
        finally:
            s.close()
    raise HarnessError(f"could not find {n} free loopback ports")


def accepts(port: int, host: str = HOST, timeout_s: float = 1.0) -> bool:
    """Whether a TCP connection to `host`:`port` is accepted within `timeout_s` seconds (then closed)."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False
