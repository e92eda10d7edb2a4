#!/usr/bin/env python3
"""The folders of src/ (and include/tokenbatch/) form a strict stack.

Reads every #include of the project's own headers in src/<folder>/ and
include/tokenbatch/<folder>/ and checks it against the table below: the
server's path http -> api -> service -> runtime -> core, with tokenizer,
backend (and hf on it), workload and sim beside it, and cli on top. A folder
never includes one above it or beside it that the table does not name, so the
graph has no cycle. Tests (*_test.cc, test_*.h|cc, serve_process.h) may also
include what their folder's dependencies include, and the test helpers
(src/testing) and the tokenizer.

Third-party libraries are held to their layer too: only src/http includes Boost
(Beast, Asio); src/service includes none of Boost, simdjson, OpenSSL or zlib.

And no source file is longer than 400 lines (small files, one concept each),
and every file the README's request-path diagram names exists.

Usage: check_layers.py [SOURCE_DIR]; exits 1 listing every violation.
Standard library only.
"""

import pathlib
import re
import sys

# Folder -> the folders its production code may include (besides itself).
ALLOWED = {
    "core": set(),
    "runtime": {"core"},
    "tokenizer": {"core"},
    "backend": {"core"},
    "workload": {"core"},
    "hf": {"core", "backend"},
    "sim": {"core", "runtime", "workload"},
    "service": {"core", "runtime", "tokenizer", "backend"},
    "api": {"core", "runtime", "tokenizer", "backend", "service"},
    "http": {"core", "runtime", "api"},
    "cli": {"core", "runtime", "tokenizer", "backend", "hf", "workload", "sim", "service", "api", "http"},
    "testing": {"core", "tokenizer"},
    # The Python package's extension modules (nanobind), beside the server.
    "python": {"core", "runtime", "tokenizer", "backend", "hf", "service"},
}
# The server's stack, top to bottom: each layer includes the next one down and
# none above it.
STACK = ["http", "api", "service", "runtime", "core"]
# Third-party include prefixes a folder must not use.
SOCKETS = ("boost/", "asio")  # Beast and Asio, Boost's or standalone
FORBIDDEN_THIRD_PARTY = {folder: SOCKETS for folder in ALLOWED if folder != "http"}
FORBIDDEN_THIRD_PARTY["service"] = SOCKETS + ("simdjson", "openssl/", "zlib.h")
MAX_LINES = 400
# Every include, quoted or bracketed, with or without a space after `include`.
ANY_INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.MULTILINE)


def is_test_file(path: pathlib.Path) -> bool:
    name = path.name
    return name.endswith("_test.cc") or name.startswith("test_") or name == "serve_process.h"


def closure(folder: str) -> set:
    """Every folder `folder` reaches through ALLOWED."""
    seen, todo = set(), list(ALLOWED[folder])
    while todo:
        f = todo.pop()
        if f not in seen:
            seen.add(f)
            todo.extend(ALLOWED[f])
    return seen


def check_table() -> list:
    """The table itself: acyclic, and the stack's layers in order."""
    problems = []
    for folder in ALLOWED:
        if folder in closure(folder):
            problems.append(f"the table has a cycle through {folder}")
    for upper, lower in zip(STACK, STACK[1:]):
        if lower not in ALLOWED[upper]:
            problems.append(f"the stack says {upper} stands on {lower}, the table does not")
        if upper in closure(lower):
            problems.append(f"{lower} reaches {upper}, which stands on it")
    return problems


def included_folder(include: str):
    """The project folder an include names, or None for a third-party header.

    "tokenbatch/api/x.h" and "api/x.h" (the include/ and src/ roots), also as
    "src/api/x.h" or "../api/x.h"; a folder under the include root that the
    table does not know is returned as it is, so that it is reported.
    """
    parts = [p for p in include.split("/") if p not in ("..", ".")]
    if parts and parts[0] == "src":
        parts = parts[1:]
    if len(parts) > 2 and parts[0] == "tokenbatch":
        return parts[1]
    if len(parts) > 1 and parts[0] in ALLOWED:
        return parts[0]
    return None


def check_tree(root: pathlib.Path) -> list:
    problems = []
    bases = [root / "src", root / "include" / "tokenbatch"]
    for base in bases:
        for path in sorted(base.rglob("*")):
            if path.suffix not in (".h", ".cc", ".in") or not path.is_file():
                continue
            folder = path.relative_to(base).parts[0]
            rel = path.relative_to(root)
            if folder not in ALLOWED:
                problems.append(f"{rel}: folder {folder} is not in the layer table")
                continue
            text = path.read_text(encoding="utf-8")
            if base.name == "src" and text.count("\n") > MAX_LINES:
                problems.append(f"{rel}: {text.count(chr(10))} lines, more than {MAX_LINES}")
            allowed = set(ALLOWED[folder])
            if is_test_file(path):
                allowed |= closure(folder) | {"testing", "tokenizer"}
            for include in ANY_INCLUDE.findall(text):
                target = included_folder(include)
                if target is not None and target != folder and target not in allowed:
                    problems.append(f"{rel}: includes {include} ({folder} must not depend on {target})")
            for include in ANY_INCLUDE.findall(text):
                for prefix in FORBIDDEN_THIRD_PARTY.get(folder, ()):
                    if include.startswith(prefix):
                        problems.append(f"{rel}: includes {include}, which {folder} must not use")
    return problems


def check_readme(root: pathlib.Path) -> list:
    """Every path in the README's "The request path" section names a file of the tree."""
    text = (root / "README.md").read_text(encoding="utf-8")
    start = text.find("### The request path")
    if start < 0:
        return ["README.md: no \"### The request path\" section"]
    end = text.find("\n## ", start)
    section = text[start : end if end > 0 else len(text)]
    problems = []
    paths = set(re.findall(r"\b((?:src|include|tests)/[\w./-]+\.(?:cc|h|py))\b", section))
    if len(paths) < 10:
        problems.append(f"README.md: the request path names only {len(paths)} files")
    for path in sorted(paths):
        if not (root / path).is_file():
            problems.append(f"README.md: the request path names {path}, which does not exist")
    return problems


def self_test() -> list:
    """The checks find what they must: a tree with one violation of each kind."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(tmp)
        files = {
            "src/service/upward.cc": '#include "api/router.h"\n',
            "src/http/skips.cc": '#include "tokenbatch/service/embedding_service.h"\n',
            "src/api/sockets.cc": "#include <boost/asio.hpp>\n",
            "src/core/long.cc": "// a line\n" * (MAX_LINES + 1),
            "src/http/fine.cc": '#include "api/router.h"\n#include <boost/beast.hpp>\n',
            "src/http/server_test.cc": '#include "tokenbatch/service/embedding_service.h"\n',
            "src/runtime/bracketed.cc": "#include<tokenbatch/service/embedding_service.h>\n",
            "src/core/relative.h": '#include "../runtime/batcher.h"\n',
            "include/tokenbatch/service/public.h": '#include "tokenbatch/http/http_server.h"\n',
            "src/tokenizer/test_helper.h": '#include "tokenbatch/api/server_options.h"\n',
            "src/gpu/new_folder.cc": "int x;\n",
        }
        for name, text in files.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text)
        found = check_tree(root)
    expected = ["src/service/upward.cc", "src/http/skips.cc", "src/api/sockets.cc", "src/core/long.cc",
                "src/runtime/bracketed.cc", "src/core/relative.h", "include/tokenbatch/service/public.h",
                "src/tokenizer/test_helper.h", "src/gpu/new_folder.cc"]
    problems = []
    for name in expected:
        if not any(f.startswith(name + ":") for f in found):
            problems.append(f"self-test: the violation in {name} was not found")
    if len(found) != len(expected):
        problems.append(f"self-test: {len(found)} violations found, {len(expected)} expected: {found}")
    return problems


def main() -> int:
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parents[2])
    problems = self_test() + check_table() + check_tree(root) + check_readme(root)
    for p in problems:
        print(p)
    if problems:
        print(f"check_layers: {len(problems)} violation(s)")
        return 1
    print("check_layers: every include follows the layer table; no source file over", MAX_LINES, "lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
