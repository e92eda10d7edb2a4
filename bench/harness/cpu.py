"""CPU time from /proc: per process, of a process and its descendants, of the machine.

Times are in clock ticks (CLK_TCK per second) where the name says ticks, else
in seconds or in cores busy (CPU seconds per wall second). A process's
utime + stime in /proc/PID/stat already sums all its threads. Standard
library only and cheap to import: the load client runs it in the process
whose own CPU time it reports.
"""

from __future__ import annotations

import os
import time
from typing import Iterable

CLK_TCK = os.sysconf("SC_CLK_TCK")


def proc_tree(pids: Iterable[int]) -> set[int]:
    """The given pids and all their descendants (workers may run in child processes).

    Read from /proc/PID/task/TID/children; a process that has gone is kept in
    the set but adds no children. Never raises for a missing process.
    """
    seen: set[int] = set()
    todo = list(pids)
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        try:
            for tid in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{tid}/children") as f:
                    todo.extend(int(c) for c in f.read().split())
        except OSError:
            pass
    return seen


def cpu_ticks(pids: Iterable[int]) -> dict[int, int]:
    """utime + stime, in clock ticks, of each pid that still exists (gone ones are left out)."""
    out = {}
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                # The command name may hold spaces and parentheses: split after the last ")".
                fields = f.read().rsplit(")", 1)[1].split()
            out[pid] = int(fields[11]) + int(fields[12])
        except (OSError, IndexError, ValueError):
            pass
    return out


def machine_ticks() -> tuple[int, int]:
    """(busy, total) clock ticks of all CPUs since boot, from /proc/stat's first line.

    Total is user + nice + system + idle + iowait + irq + softirq + steal; busy
    is total less idle and iowait. Raises OSError when /proc/stat cannot be read.
    """
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    idle = v[3] + v[4]
    return sum(v[:8]) - idle, sum(v[:8])


class CpuWindow:
    """Cores busy per group of processes, and of the whole machine, over one window.

    `groups` maps a name to root pids; each group is charged the CPU time of its
    roots and their descendants (looked up at both ends of the window). Meant to
    run in a thread beside the load: `run` sleeps, measures, and leaves
    `result` = {"window_s", "machine_cores", "<group>_cores", ...}.
    """

    def __init__(self, groups: dict[str, list[int]]):
        self.groups = groups
        self.result: dict = {}

    def snap(self) -> dict:
        """The monotonic time, the machine's ticks and each group's ticks per pid, now."""
        return {"t": time.monotonic(), "machine": machine_ticks(),
                **{g: cpu_ticks(proc_tree(p)) for g, p in self.groups.items()}}

    def run(self, start_after: float, length: float) -> None:
        """Sleeps `start_after` seconds, then measures over max(0.5, `length`) seconds into `result`.

        A process that appears during the window is charged only from its first
        snapshot on (nothing when it was not there at the start).
        """
        time.sleep(start_after)
        a = self.snap()
        time.sleep(max(0.5, length))
        b = self.snap()
        dt = b["t"] - a["t"]
        res = {"window_s": round(dt, 2)}
        busy = (b["machine"][0] - a["machine"][0]) / CLK_TCK / dt
        res["machine_cores"] = round(busy, 2)
        for g in self.groups:
            d = sum(v - a[g].get(pid, v) for pid, v in b[g].items())
            res[f"{g}_cores"] = round(d / CLK_TCK / dt, 2)
        self.result = res
