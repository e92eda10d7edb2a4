"""The libraries a serving process of the GPU bundle maps (gpu_check.sh): every
shared object must come from the bundle itself, from torch's installation (its
lib folder and its nvidia-* wheels, beside it in site-packages), from the C
library, or from the GPU driver. Anything else (a build tree, a system library
the bundle should have carried) fails the check, by name.

    bundle_libraries.py TOKENBATCH MODEL_DIR [--device cpu]

TOKENBATCH is the bundle's bin/tokenbatch; the server embeds one text first, so
the forward's libraries are loaded.
"""
import argparse
import os
import sys

import torch

from serving import Serving, post_json

# The C library's own objects, and the driver's (found by libcuda, never carried).
SYSTEM = ("linux-vdso.so", "libc.so", "libm.so", "libpthread.so", "libdl.so", "librt.so", "ld-linux-x86-64.so",
          "libresolv.so", "libutil.so", "libcuda.so", "libnvidia-")


def mapped_libraries(pid):
    paths = set()
    with open(f"/proc/{pid}/maps") as f:
        for line in f:
            parts = line.split(maxsplit=5)
            if len(parts) == 6 and ".so" in os.path.basename(parts[5].strip()):
                paths.add(parts[5].strip())
    return sorted(paths)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tokenbatch")
    parser.add_argument("model_dir")
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    bundle = os.path.realpath(os.path.join(os.path.dirname(args.tokenbatch), ".."))
    site = os.path.realpath(os.path.join(os.path.dirname(torch.__file__), ".."))
    serving = Serving(args.tokenbatch, ["--model-id", args.model_dir, "--device", args.device])
    with serving as port:
        status, body = post_json(port, "/embed", {"inputs": "the libraries of a forward"})
        assert status == 200, f"/embed answered {status}: {body}"
        # The launcher execs the program: the child's pid is the server's.
        libraries = mapped_libraries(serving.server.pid)
    outside = [p for p in libraries
               if not os.path.realpath(p).startswith((bundle + os.sep, site + os.sep))
               and not os.path.basename(p).startswith(SYSTEM)]
    for p in libraries:
        print(("OUTSIDE " if p in outside else "        ") + p)
    if outside:
        sys.exit(f"bundle_libraries: {len(outside)} of {len(libraries)} libraries from outside the bundle and torch: "
                 + ", ".join(outside))
    print(f"bundle_libraries: {len(libraries)} libraries, all from the bundle, torch ({site}), libc or the driver")


if __name__ == "__main__":
    main()
