"""Fill the test session's nvcc cache in the background (started by tests/conftest.py).

Reads a JSON list of ``[file, entry, defines, arch]`` on stdin and makes each build
with :func:`helpers.runtime.compile.nvcc_check`, which writes the result to
``$GEMM_BOOK_NVCC_CACHE``; as many builds at once as there are cores, at the lowest
CPU priority (``nice 19``; nvcc, cicc and ptxas inherit it), so that any other work of
the session runs first. A build that fails is left to the test that reads it.
"""
import json
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from helpers.runtime import compile as kc


def main() -> None:
    if hasattr(os, "nice"):
        os.nice(19)                 # before any thread starts: the threads and their children inherit it
    jobs = json.load(sys.stdin)

    def one(job):
        file, entry, defines, arch = job
        try:
            kc.nvcc_check(file, entry, defines, arch=arch)
        except Exception:
            pass
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as ex:
        list(ex.map(one, jobs))


if __name__ == "__main__":
    main()
