"""Fingerprint the machine code of every kernel build the book ships, to compare two commits.

Usage (no GPU needed; nvcc and nvdisasm, from the repository root of the commit to fingerprint)::

    python scripts/sass_fingerprint.py --out /tmp/after.json [--jobs 2] [--only REGEX]
    python scripts/sass_fingerprint.py --compare /tmp/before.json /tmp/after.json

A refactoring of ``kernels/`` that must not change what the kernels compile to is checked by
running the first command on the commit before it and on the commit after it (a
``git worktree`` of the older commit, with this script copied in), then the second.

The builds, each named ``group/key/defines/arch`` (names do not depend on the files, so an
experiment moved to another file keeps its name):

- ``catalog``: every catalog entry at every shipped configuration
  (``Kernel.configs()``), with ``Kernel.defines``, for sm_90 (sm_90a for arch-specific
  entries) and sm_80 where the entry claims it; the ``ENTRY_`` define is added where the
  file reads it, as ``helpers.runtime.compile.nvcc_check`` adds it;
- ``slider``: a seeded sample of the slider configurations of chapters 5-10;
- ``owner``: each entry at its defaults with ``RECORD_OWNER=1``;
- ``exp``: the experiment builds: chapter 7's probe rungs (``PROBE`` 1-4) and its ladder,
  chapter 5's ``SERPENTINE`` x ``FAST_INTERIOR`` builds at the two tiles of
  ``scripts/ch5_flags.py``, chapter 10's switches kept for ``notes/hopper_tuning.md``
  (``WAIT_SPIN``, ``EARLY_RELEASE``, ``B_DESC_SWAP``, ``CLUSTER_ARRIVE``, ``MULTICAST``,
  ``PRODUCER_REGS`` / ``CONSUMER_REGS``), chapter 9's split-K build of chapter 10's kernel,
  ``tma_box_dump``, and every entry of ``kernels/09_any_shape.cu`` as ``build_all``
  compiles them. Where the catalog entry names an experiment file for a switch
  (``Kernel.build_target``), that file and entry are built.

Each build records the sha256 of its SASS listing (``helpers.runtime.compile.sass_listing``:
one instruction per line, no addresses) and nvcc's registers, static shared memory, stack
and spills (``nvcc_check``), or the error when it does not compile. Branch labels are
renumbered in order of appearance within the entry (``.L_x_12`` -> ``.L_0``): the assembler
numbers them across the whole module, so an entry compiled next to another one (an
experiment file that includes its teaching kernel) gets other numbers for the same code. Output: a JSON object
``{name: {"sass_sha256", "instructions", "registers", ...}}``. ``--compare`` prints every
name whose fingerprint differs or that only one side has, and exits 1 when any does.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _label(defines: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(defines.items()))


def _target(spec, defines: dict) -> tuple[str, str]:
    pick = getattr(spec, "build_target", None)       # absent before experiment files existed
    return tuple(pick(defines)) if pick else (spec.file, spec.entry)


def _archs(spec) -> list[str]:
    if spec.arch_specific:
        return ["sm_90a"]
    return ["sm_90"] + (["sm_80"] if spec.runs_on((8, 0)) else [])


def jobs() -> list[tuple]:
    """(name, file, entry, defines, arch) of every build, names unique."""
    import helpers  # noqa: F401  (fills the catalog)
    from helpers.chapters import ch07_mma_sync as ch7
    from helpers.chapters import ch10_hopper as ch10
    from helpers.models import anyshape as anymodel
    from helpers.runtime import anyshape as anyrt, catalog

    out = {}

    def add(group, key, spec, defines, archs=None, file=None, entry=None):
        for arch in archs or _archs(spec):
            name = f"{group}/{key}/{_label(defines)}/{arch}"
            f, e = _target(spec, defines)
            out.setdefault(name, (name, file or f, entry or e, defines, arch))

    for key, spec in catalog.KERNELS.items():
        for p in spec.configs():
            add("catalog", key, spec, spec.defines(p))
        add("owner", key, spec, {**spec.defines(spec.defaults), "RECORD_OWNER": 1}, archs=_archs(spec)[:1])
        if spec.chapter in (5, 6, 7, 9, 10):
            for p in spec.slider_configs(limit=6, seed=1):
                add("slider", key, spec, spec.defines(p), archs=_archs(spec)[:1])
    for key in ("mma_sync_f16", "mma_sync_bf16"):                       # chapter 7: probe rungs
        spec = catalog.get(key)
        for n in (1, 2, 3, 4):
            add("exp", key, spec, {**spec.defines(spec.defaults), "PROBE": n})
    for dt in ("float16", "bfloat16"):                                  # chapter 7: the ladder
        for r in ch7.ladder_rungs(dt):
            spec = catalog.get(r["key"])
            add("exp", r["key"], spec, spec.defines(r["params"]))
    spec = catalog.get("cp_async")                                      # chapter 5: the flags
    for p in (dict(spec.defaults), {**spec.defaults, "BN": 128, "WN": 32, "TN": 8, "BK": 8}):
        for s in (0, 1):
            for f in (0, 1):
                add("exp", "cp_async", spec, {**spec.defines(p), "SERPENTINE": s, "FAST_INTERIOR": f})
    switches = [{"WAIT_SPIN": 1}, {"EARLY_RELEASE": 1}, {"B_DESC_SWAP": 1},
                {"PRODUCER_REGS": 24, "CONSUMER_REGS": 240}, {"PRODUCER_REGS": 56, "CONSUMER_REGS": 224}]
    cluster = [{"CLUSTER_ARRIVE": 1}, {"CLUSTER_ARRIVE": 2}, {"MULTICAST": 0}]
    for dt in ("float16", "bfloat16"):                                  # chapter 10: the switches
        for rung in ch10.LADDER[1:]:
            spec = catalog.get(ch10.key(rung, dt))
            for sw in switches + (cluster if spec.defaults["CLUSTER_M"] == 2 else []):
                add("exp", spec.key, spec, {**spec.defines(spec.defaults), **sw})
        spec = catalog.get(ch10.key("r5_tma_store", dt))                # chapter 9's split-K build
        for cl in (1, 2):
            add("exp", spec.key + ":splitk", spec,
                {**spec.defines({**spec.defaults, "EPI_TMA": 0, "CLUSTER_M": cl}), "SPLIT_K": 1})
        add("exp", "tma_box_dump", spec, {"BF16": int(dt == "bfloat16")}, file=spec.file, entry="tma_box_dump")
    spec = catalog.get("any_shape_f16")                                 # chapter 9: every entry
    for entry in anyrt.ENTRIES:
        for bf in (0, 1):
            for aligned, partial in ((1, 0), (0, 0), (1, 1)):
                d = {**anymodel.CFG, "BF16": bf, "ALIGNED": aligned, **({"PARTIAL_CHUNKS": 1} if partial else {})}
                add("exp", f"09:{entry}", spec, d, file=spec.file, entry=entry)
    return sorted(out.values())


def fingerprint(job: tuple) -> tuple[str, dict]:
    from helpers.runtime import compile as kc
    name, file, entry, defines, arch = job
    d = kc.entry_defines(entry, defines) if "ENTRY_" in kc.source(file) else dict(defines)
    try:
        sass = kc.sass_listing(file, entry, d, arch)
        r = kc.nvcc_check(file, entry, defines, arch=arch)
    except Exception as e:
        msg = getattr(e, "stderr", None) or str(e)
        return name, {"error": re.sub(r"/tmp/\S+", "<tmp>", str(msg))[:400]}
    labels: dict = {}
    sass = [re.sub(r"\.L_x_\d+", lambda m: labels.setdefault(m.group(0), f".L_{len(labels)}"), x) for x in sass]
    return name, {"sass_sha256": hashlib.sha256("\n".join(sass).encode()).hexdigest(),
                  "instructions": len(sass), "file": file,
                  **{k: r[k] for k in ("registers", "smem_static", "stack", "spill_stores", "spill_loads")}}


def compare(a_path: str, b_path: str) -> int:
    """Print the names whose fingerprints differ (the file may differ); 1 if any does."""
    a, b = json.loads(Path(a_path).read_text()), json.loads(Path(b_path).read_text())
    def strip(v: dict) -> dict:
        return {k: x for k, x in v.items() if k != "file"}
    diff = [n for n in sorted(set(a) | set(b)) if n not in a or n not in b or strip(a[n]) != strip(b[n])]
    same = len(set(a) & set(b)) - sum(1 for n in diff if n in a and n in b)
    for n in diff:
        print(f"DIFF {n}\n  {a_path}: {a.get(n)}\n  {b_path}: {b.get(n)}")
    moved = sum(1 for n in set(a) & set(b) if n not in diff and a[n].get("file") != b[n].get("file"))
    print(f"{same} builds identical ({moved} of them now built from another file), {len(diff)} differ "
          f"or are on one side only; {len(a)} in {a_path}, {len(b)} in {b_path}")
    return 1 if diff else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="write the fingerprints here (JSON)")
    ap.add_argument("--jobs", type=int, default=2, help="parallel builds (default 2)")
    ap.add_argument("--only", help="only builds whose name matches this regular expression")
    ap.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"), help="compare two outputs")
    a = ap.parse_args(argv)
    if a.compare:
        return compare(*a.compare)
    if not a.out:
        ap.error("--out is required (or --compare)")
    todo = [j for j in jobs() if not a.only or re.search(a.only, j[0])]
    random.Random(0).shuffle(todo)           # mix long and short builds across the workers
    res = {}
    with ThreadPoolExecutor(max_workers=max(1, a.jobs)) as ex:
        for i, (name, fp) in enumerate(ex.map(fingerprint, todo), 1):
            res[name] = fp
            if i % 50 == 0 or i == len(todo):
                print(f"{i}/{len(todo)} builds", flush=True)
    Path(a.out).write_text(json.dumps(dict(sorted(res.items())), indent=1) + "\n")
    print(f"wrote {a.out}: {len(res)} builds, {sum('error' in v for v in res.values())} do not compile")
    return 0


if __name__ == "__main__":
    sys.exit(main())
