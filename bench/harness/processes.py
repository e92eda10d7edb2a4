"""Processes a bench or test starts: their logs, readiness, and killing them.

Every process starts with stdin from /dev/null and stdout and stderr in one
log file, so that a failure can quote the log's tail. A process started in its
own session (process group) can be killed with everything it forked.
`Registry` remembers every process a run started and kills those still alive
at the end, so that a failed check leaves nothing running.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from typing import Callable, TypeVar

T = TypeVar("T")


class HarnessError(Exception):
    """A process or a check failed; the message says which and with what measured values or log lines."""


class ProcessExited(HarnessError):
    """The process exited while it was being waited for; `returncode` is its exit status."""

    def __init__(self, proc: subprocess.Popen):
        super().__init__(f"process {proc.pid} exited {proc.returncode}")
        self.returncode = proc.returncode


def spawn(cmd: list[str], log_path: str, env: dict | None = None, new_session: bool = False) -> subprocess.Popen:
    """Starts `cmd` with stdin from /dev/null and stdout and stderr written to `log_path`.

    `env` replaces the environment (None: this process's). With `new_session`
    the process leads its own session and process group, which `kill(...,
    group=True)` then kills whole. Raises OSError when the program cannot be run.
    """
    with open(log_path, "wb") as logf:
        return subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=logf, stderr=logf, env=env,
                                start_new_session=new_session)


def read_log(path: str) -> str:
    """The whole text of the log at `path` (undecodable bytes replaced); "" when it cannot be read."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def log_tail(path: str, lines: int = 25) -> str:
    """The last `lines` lines of the log at `path`, or a note saying why there is none."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError as e:
        return f"(no log: {e})"


def wait_until(proc: subprocess.Popen, probe: Callable[[], T], timeout_s: float, poll_s: float = 0.05) -> T | None:
    """Calls `probe()` every `poll_s` seconds until it returns a true value, and returns that value.

    Checks first, on every round, that `proc` still runs. Returns None when
    `timeout_s` seconds pass first. Raises ProcessExited when `proc` exits
    first; whatever `probe` raises propagates.
    """
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise ProcessExited(proc)
        got = probe()
        if got:
            return got
        time.sleep(poll_s)
    return None


def wait_for_log(proc: subprocess.Popen, log_path: str, pattern: re.Pattern, timeout_s: float = 60,
                 poll_s: float = 0.05) -> re.Match | None:
    """The first match of `pattern` in the log at `log_path`, polled every `poll_s` seconds.

    None when `proc` exits, or `timeout_s` seconds pass, before the log holds a match.
    """
    try:
        return wait_until(proc, lambda: pattern.search(read_log(log_path)), timeout_s, poll_s)
    except ProcessExited:
        return None


def kill(proc: subprocess.Popen, group: bool = False, timeout_s: float | None = 10.0) -> None:
    """SIGKILLs `proc` if it still runs (with `group`, its whole process group) and reaps it.

    Waits at most `timeout_s` seconds for it (None: as long as it takes);
    raises subprocess.TimeoutExpired when it outlives that. A process that has
    already gone is not an error.
    """
    if proc.poll() is not None:
        return
    try:
        if group:
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.kill()
    except ProcessLookupError:
        pass
    proc.wait(timeout=timeout_s)


class Registry:
    """Every process a run started, each in its own process group, killed whole at the end.

    Logs are numbered in start order under `workdir`: 01-name.log, 02-name.log, ...
    """

    def __init__(self, workdir: str):
        self.workdir = workdir
        self.started: list[subprocess.Popen] = []
        self.count = 0

    def log_path(self, name: str) -> str:
        """A new log file path under the work directory for a process called `name`."""
        self.count += 1
        return os.path.join(self.workdir, f"{self.count:02d}-{name}.log")

    def spawn(self, cmd: list[str], log_path: str, env: dict | None = None) -> subprocess.Popen:
        """Starts `cmd` in a new session with its output in `log_path` (see `spawn`) and registers it.

        Raises OSError when the program cannot be run.
        """
        p = spawn(cmd, log_path, env=env, new_session=True)
        self.started.append(p)
        return p

    def kill_all(self) -> None:
        """SIGKILLs the process group of every registered process still running, then reaps them.

        Waits up to 10 seconds for each; one that outlives that is left, without an error.
        """
        for p in self.started:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        for p in self.started:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
