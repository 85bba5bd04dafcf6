"""Chapter 5's kernels before and after a change of kernels/05_register_tiling.cu.

Two modes, one list: every configuration the catalog ships for chapter 5 (each
entry's defaults and sweep points, ``Kernel.configs()``, plus the
``-DRECORD_OWNER=1`` build of the defaults where the entry has an owner model).

On a GPU (the default): time each configuration at 4096^3 with the book's bench
(``helpers.runtime.bench.gemm``: verified against float64, timed against cuBLAS
in alternating rounds) and print its ratio to cuBLAS, next to the ratio recorded
in results/<gpu>.json. With ``--before OLD.cu`` (an earlier version of the
kernel file, e.g. ``git show <ref>:kernels/05_register_tiling.cu > OLD.cu``) the
old and the current source are timed in the same process, alternating per
configuration, and the table shows both ratios and their quotient::

    python scripts/ch5_regression.py --before ch5_before.cu

Without a GPU (``--nvcc``): build each configuration with
``nvcc -cubin -arch=<arch> -Xptxas -v`` and print registers, spills, stack and
static shared memory per kernel; ``--json`` saves them, ``--compare A B``
prints the rows where two saved tables differ, and ``--sass DIR`` also writes
each kernel's SASS opcode counts (needs ``nvdisasm``: pip install nvidia-cuda-nvdisasm)::

    python scripts/ch5_regression.py --nvcc --json after.json
    python scripts/ch5_regression.py --nvcc --kernel-dir /tmp/old --json before.json
    python scripts/ch5_regression.py --compare before.json after.json
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import shutil
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import helpers  # noqa: F401  (fills the catalog)
from helpers.runtime import catalog, compile as kc

FILE = "05_register_tiling.cu"
SHAPE = (4096, 4096, 4096)


def cases() -> list[tuple[str, str, dict]]:
    """(label, key, -D values) of every chapter-5 configuration the book ships."""
    out = []
    for spec in catalog.chapter(5):
        for i, p in enumerate(spec.configs()):
            out.append((f"{spec.key}-{i}", spec.key, spec.defines(p)))
        if spec.owner is not None:
            out.append((f"{spec.key}-owner", spec.key, {**spec.defines(spec.defaults), "RECORD_OWNER": 1}))
    return out


def _short(d: dict, spec) -> str:
    return " ".join(f"{k}={v}" for k, v in d.items() if spec.defaults.get(k) != v) or "defaults"


# ---------------------------------------------------------------- nvcc (CPU)
def sass(entry: str, defines: dict, arch: str) -> list[str]:
    """The SASS instructions of ``entry`` (helpers.runtime.compile.sass_listing)."""
    return kc.sass_listing(FILE, entry, kc.entry_defines(entry, defines), arch)


def opcodes(listing: list[str]) -> Counter:
    """Opcode counts (mnemonic with modifiers, predicate dropped) of a :func:`sass` listing."""
    ops = Counter()
    for ins in listing:
        m = re.match(r"(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", ins)
        if m:
            ops[m.group(1)] += 1
    return ops


def nvcc_table(arch: str, sass_dir: str | None) -> list[dict]:
    rows = []
    for label, key, d in cases():
        spec = catalog.get(key)
        r = kc.nvcc_check(FILE, spec.entry, d, arch=arch)
        row = {"label": label, "entry": spec.entry, "params": _short(d, spec), **{k: r[k] for k in
               ("registers", "spill_stores", "spill_loads", "stack", "smem_static")}}
        if sass_dir:
            listing = sass(spec.entry, d, arch)
            ops = opcodes(listing)
            row["sass_total"] = sum(ops.values())
            row["sass_ops"] = dict(sorted(ops.items()))
            Path(sass_dir).mkdir(parents=True, exist_ok=True)
            (Path(sass_dir) / f"{label}.sass").write_text("\n".join(listing) + "\n")
        rows.append(row)
        print(f"{label:22s} {row['registers']:4d} regs  spills {row['spill_stores']}/{row['spill_loads']}  "
              f"stack {row['stack']}  smem {row['smem_static']:6d}"
              + (f"  sass {row['sass_total']}" if sass_dir else "") + f"  {row['params']}", flush=True)
    return rows


def compare(a_path: str, b_path: str) -> int:
    a = {r["label"]: r for r in json.loads(Path(a_path).read_text())}
    b = {r["label"]: r for r in json.loads(Path(b_path).read_text())}
    keys = ("registers", "spill_stores", "spill_loads", "stack", "smem_static", "sass_total")
    diff = 0
    for label in a.keys() | b.keys():
        ra, rb = a.get(label), b.get(label)
        if ra is None or rb is None:
            print(f"{label}: only in {'B' if ra is None else 'A'}")
            diff += 1
            continue
        d = [f"{k} {ra[k]} -> {rb[k]}" for k in keys if k in ra and k in rb and ra[k] != rb[k]]
        if "sass_ops" in ra and "sass_ops" in rb and ra["sass_ops"] != rb["sass_ops"]:
            oa, ob = Counter(ra["sass_ops"]), Counter(rb["sass_ops"])
            d.append("opcodes " + " ".join(f"{op} {oa[op]}->{ob[op]}" for op in sorted(oa.keys() | ob.keys())
                                           if oa[op] != ob[op]))
        if d:
            print(f"{label}: " + ", ".join(d))
            diff += 1
    print(f"{len(a)} configurations, {diff} differ")
    return 1 if diff else 0


# ---------------------------------------------------------------- GPU
def _before_specs(path: str) -> dict:
    """Catalog copies of the chapter-5 entries that build ``path`` instead (a temporary
    kernels directory holding it and kernels/instrument.cuh); key -> key of the copy."""
    tmp = Path(tempfile.mkdtemp(prefix="ch5_before_"))
    shutil.copy(path, tmp / FILE)
    shutil.copy(kc.KERNEL_DIR / "instrument.cuh", tmp / "instrument.cuh")
    out = {}
    for spec in catalog.chapter(5):
        copy = dataclasses.replace(spec, key=spec.key + "@before", file=str(tmp / FILE))   # an absolute path
        if copy.key not in catalog.KERNELS:
            catalog.register(copy)
        out[spec.key] = copy.key
    return out


def gpu_table(before: str | None, rounds: int, only: set | None) -> None:
    from helpers.runtime import bench, gpu, results
    if not gpu.live():
        sys.exit("no GPU: use --nvcc for the CPU check")
    todo = [c for c in cases() if not c[0].endswith("-owner") and (not only or c[1] in only or c[0] in only)]
    old = _before_specs(before) if before else {}
    print(f"{gpu.cupy().cuda.runtime.getDeviceProperties(0)['name'].decode()}, {SHAPE[0]}^3, "
          f"{rounds} alternating rounds against cuBLAS per kernel")
    head = f"{'config':22s} {'recorded':>8s} " + (f"{'before':>8s} {'after':>8s} {'after/before':>12s}"
                                                    if old else f"{'now':>8s}") + "  params"
    print(head)
    for label, key, d in todo:
        spec = catalog.get(key)
        p = {k: v for k, v in d.items() if k in spec.defaults}
        rec = results.lookup(key, p, spec.dtype, SHAPE)
        rec_ratio = f"{rec['ratio']:.3f}" if rec and rec.get("ratio") else "-"
        if old:
            # before, after, after, before on the same inputs, each against its own cuBLAS rounds
            b1, a1, a2, b2 = bench.gemm([(old[key], p), (key, p), (key, p), (old[key], p)], SHAPE, rounds=rounds)
            rb, ra = (b1["ratio"] + b2["ratio"]) / 2, (a1["ratio"] + a2["ratio"]) / 2
            print(f"{label:22s} {rec_ratio:>8s} {rb:8.3f} {ra:8.3f} {ra / rb:12.3f}  {_short(p, spec)}", flush=True)
        else:
            r = bench.gemm([(key, p)], SHAPE, rounds=rounds)[0]
            print(f"{label:22s} {rec_ratio:>8s} {r['ratio']:8.3f}  {_short(p, spec)}", flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nvcc", action="store_true", help="no GPU: nvcc resources per configuration")
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--kernel-dir", help="build the kernel file of this directory (with its instrument.cuh)")
    ap.add_argument("--json", help="save the --nvcc table here")
    ap.add_argument("--sass", metavar="DIR", help="with --nvcc: write SASS opcode counts per configuration")
    ap.add_argument("--compare", nargs=2, metavar=("A", "B"), help="differences between two --json tables")
    ap.add_argument("--before", help="GPU: an older copy of the kernel file, timed against the current one")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--only", help="GPU: comma-separated catalog keys or labels (e.g. warptile_db,cp_async-0)")
    a = ap.parse_args(argv)
    if a.compare:
        return compare(*a.compare)
    if a.kernel_dir:
        kc.KERNEL_DIR = Path(a.kernel_dir).resolve()
    if a.nvcc:
        rows = nvcc_table(a.arch, a.sass)
        if a.json:
            Path(a.json).write_text(json.dumps(rows, indent=1))
        return 0
    gpu_table(a.before, a.rounds, set(a.only.split(",")) if a.only else None)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
