#!/usr/bin/env python3
"""clang's -Wthread-safety over every translation unit that takes a lock.

Reads the build's compile_commands.json (CMAKE_EXPORT_COMPILE_COMMANDS), keeps
the project's translation units that take a lock (they name Mutex, MutexLock, a
GUARDED_BY annotation or a std::mutex, or include a project header that does),
and compiles each with clang++ -fsyntax-only -Wthread-safety
-Werror=thread-safety, using the build's own include paths and definitions; the
build's warning flags (GCC's) and its output flags are left out.

Each check runs through ccache when it is installed (ccache caches a
-fsyntax-only compile: its diagnostics and exit status), in the project's cache
(TOKENBATCH_CCACHE_DIR, else ~/.cache/tokenbatch/ccache) with paths under the
source tree rewritten relative to the build folder, as the builds do
(CMakeLists.txt), so that an unchanged file in a new clone is not compiled
again. A failing check is never cached.

Usage: scripts/check_thread_safety.py BUILD_DIR [JOBS]
Exit status 1, with clang's diagnostics, if any file fails.
"""
import concurrent.futures
import json
import os
import re
import shlex
import shutil
import subprocess
import sys

LOCK = re.compile(r"\bMutex\b|\bMutexLock\b|GUARDED_BY|std::mutex|std::lock_guard|std::unique_lock")
INCLUDE = re.compile(r'^#include "([^"]+)"', re.M)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Flags of the build that clang does not take, or that produce objects.
DROP_WITH_VALUE = {"-o", "-MF", "-MT", "-MQ"}
DROP = {"-c", "-MD", "-MMD", "-Werror"}


def read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def header_path(name):
    for base in ("include", "src", ""):
        p = os.path.join(ROOT, base, name)
        if os.path.isfile(p):
            return p
    return None


def takes_lock(path, seen):
    """Whether `path` or a project header it includes (transitively) takes a lock."""
    if path in seen:
        return False
    seen.add(path)
    text = read(path)
    if LOCK.search(text):
        return True
    for name in INCLUDE.findall(text):
        h = header_path(name)
        if h and takes_lock(h, seen):
            return True
    return False


CCACHE = shutil.which("ccache")
CCACHE_ENV = dict(
    os.environ,
    CCACHE_DIR=os.environ.get("TOKENBATCH_CCACHE_DIR") or os.path.expanduser("~/.cache/tokenbatch/ccache"),
    CCACHE_BASEDIR=ROOT,
    CCACHE_NOHASHDIR="1",
)


def clang_command(entry):
    args = entry.get("arguments") or shlex.split(entry["command"])
    # The compiler (CMake leaves the launcher out of compile_commands.json; a
    # plain one such as "ccache g++" would be dropped too): everything before the first flag.
    first_flag = next((i for i, a in enumerate(args) if a.startswith("-")), len(args))
    out = [CCACHE] if CCACHE else []
    out += ["clang++", "-fsyntax-only", "-Wthread-safety", "-Werror=thread-safety", "-Wno-unknown-warning-option"]
    skip = False
    for a in args[first_flag:]:
        if skip:
            skip = False
            continue
        if a in DROP_WITH_VALUE:
            skip = True
            continue
        if a in DROP or a == entry["file"] or a.startswith("-W"):
            continue
        out.append(a)
    out.append(entry["file"])
    return out


def check(entry):
    proc = subprocess.run(clang_command(entry), cwd=entry["directory"], env=CCACHE_ENV, capture_output=True,
                          text=True)
    return entry["file"], proc.returncode, proc.stderr


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    jobs = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    with open(os.path.join(build, "compile_commands.json")) as f:
        entries = json.load(f)
    def ours(path):  # the project's sources (src/, bench/, tests/), not generated files in build dirs
        rel = os.path.relpath(path, ROOT)
        return not rel.startswith("..") and not rel.split(os.sep)[0].startswith("build")

    chosen = [e for e in entries if ours(e["file"]) and takes_lock(e["file"], set())]
    if not chosen:
        print("check_thread_safety: no translation unit takes a lock?", file=sys.stderr)
        return 1
    failed = 0
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        for path, rc, err in pool.map(check, chosen):
            rel = os.path.relpath(path, ROOT)
            if rc != 0:
                failed += 1
                print(f"FAILED {rel}\n{err}", file=sys.stderr)
    print(f"check_thread_safety: {len(chosen)} translation units, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
