"""The autotuner of heaven 8: prune by the catalog's rules, rank by a cost model, compile, time.

Steps, for one catalog kernel on one shape:

1. :func:`candidates`: every combination of the kernel's slider choices
   (:func:`helpers.models.tuning.space`), pruned by ``Kernel.validate`` with this
   GPU's per-block shared-memory limit: the rules mirror the kernel's
   ``static_assert``s, so nothing refused here is ever compiled.
2. :func:`rank`: each survivor's registers and spills from ``nvcc -Xptxas -v``
   (:func:`helpers.runtime.compile.nvcc_check`, no GPU needed, cached), spilling
   configurations dropped, the rest ordered by :func:`helpers.models.tuning.score`.
3. :func:`tune` (needs a GPU): compiles the top of the ranking plus a seeded
   random sample of the rest in parallel into CuPy's disk cache, then times each
   against cuBLAS in the same run (:func:`helpers.runtime.bench.gemm`: alternating
   rounds), with ``tqdm`` progress bars, and returns the tuning document
   (:func:`save` writes ``results/<gpu>-tuning.json`` with provenance).
4. :func:`best_fitting`: the best timed configuration that fits a GPU's
   shared-memory limit, from a tuning document, else the best-ranked one.

Not yet run on a GPU at the time of writing: the measured accuracy of the model
is what the tuning document records (``model_spearman``) once it is.
"""
from __future__ import annotations

import json
import multiprocessing
import os
import random

from tqdm.auto import tqdm

from helpers.models import tuning

from . import bench, catalog, compile as kc, gpu, launch, results

# FLOP per byte of L2 -> SM traffic the math pipe needs (peak math rate / L2 bandwidth),
# per input dtype. Leads, not measurements: H100/H200 data-sheet math rates (FP32 about
# 67 TFLOP/s; dense fp16/bf16 mma.sync reaches about 0.6 of cuBLAS's ~750, see chapter 7)
# over an L2 bandwidth of about 5.5 TB/s.
I_NEED = {"float32": 67e12 / 5.5e12, "float16": 450e12 / 5.5e12, "bfloat16": 450e12 / 5.5e12}


def candidates(key: str, shape=(4096, 4096, 4096), smem_limit: int | None = None) -> tuple[list, int]:
    """(valid parameter dicts, number refused by the rules) over the product of the kernel's
    slider choices. ``smem_limit``: bytes per block (default: the GPU the book decides for,
    or an H200's in recorded mode)."""
    spec = catalog.get(key)
    if smem_limit is None:
        t = gpu.target()
        smem_limit = t["smem_per_block_max"] if t else launch.device_limits()["smem_per_block_max"]
    ok, refused = [], 0
    for p in tuning.space(spec.slider_choices, spec.defaults):
        try:
            spec.validate(p, tuple(shape), smem_limit=smem_limit)
            ok.append(p)
        except ValueError:
            refused += 1
    return ok, refused


def _resources(args):
    file, entry, defines, arch, options = args     # plain values: a spawned process has no catalog
    try:
        r = kc.nvcc_check(file, entry, defines, arch=arch, extra_options=options)
        return {"registers": r["registers"], "spills": r["spill_stores"] + r["spill_loads"]}
    except Exception as e:  # noqa: BLE001  (a configuration that does not build is simply not ranked)
        return {"error": f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"}


def _build(args):
    file, entry, defines, options = args
    kc.build(file, entry, defines, extra_options=options)


def _pool_map(fn, args, jobs: int | None, desc: str, progress: bool) -> list:
    """``fn`` over ``args`` in spawned processes (CUDA state cannot be forked), in order, with a bar."""
    jobs = jobs or os.cpu_count() or 1
    if jobs == 1 or len(args) <= 1:
        return [fn(a) for a in tqdm(args, desc=desc, disable=not progress)]
    with multiprocessing.get_context("spawn").Pool(jobs) as pool:
        return list(tqdm(pool.imap(fn, args, chunksize=1), total=len(args), desc=desc, disable=not progress))


def resources(key: str, configs: list, arch: str = "sm_90", jobs: int | None = None,
              progress: bool = False) -> list:
    """Registers and spills of each configuration (nvcc -Xptxas -v), in parallel processes."""
    spec = catalog.get(key)
    args = [(spec.file, spec.entry, spec.defines(p), arch, tuple(spec.compile_options)) for p in configs]
    return _pool_map(_resources, args, jobs, f"nvcc {key}", progress)


def rank(key: str, configs: list, shape=(4096, 4096, 4096), arch: str = "sm_90", sms: int | None = None,
         limits: dict | None = None, res: list | None = None, shared_eff=None) -> list:
    """The configurations as {"params", "registers", "features", "score"}, best first.
    Spilling or unbuildable ones are left out. ``res``: precomputed :func:`resources`.
    ``shared_eff``: optional function (params, shape) -> ideal / predicted shared-memory
    wavefronts (a kernel's bank model), added to the features."""
    spec = catalog.get(key)
    limits = limits or launch.device_limits(arch)
    if sms is None:
        t = gpu.target()
        sms = t["sms"] if t else results.load().get("ceilings", {}).get("spec", {}).get("sms", 132)
    res = res if res is not None else resources(key, configs, arch)
    in_bytes = 2 if spec.dtype in ("float16", "bfloat16") else 4
    items = []
    for p, r in zip(configs, res):
        if "error" in r or r["spills"]:
            continue
        try:
            f = tuning.features(p, shape, threads=spec.threads(p), smem=spec.smem(p), registers=r["registers"],
                                in_bytes=in_bytes, sms=sms, limits=limits)
        except ValueError:
            continue
        if shared_eff is not None:
            f["shared_eff"] = shared_eff(spec.full(p), tuple(shape))
        items.append({"params": p, "registers": r["registers"], "features": f})
    return tuning.rank(items, I_NEED[spec.dtype])


def pre_rank(key: str, configs: list, shape=(4096, 4096, 4096), arch: str = "sm_90", sms: int = 132,
             limits: dict | None = None, shared_eff=None) -> list:
    """:func:`rank` with estimated registers (:func:`helpers.models.tuning.estimate_registers`)
    instead of nvcc's: orders a space too large to compile-check (tens of thousands of FP32
    warp-tile configurations) so that only its head goes through nvcc."""
    spec = catalog.get(key)
    res = [{"registers": tuning.estimate_registers(p, spec.threads(p)), "spills": 0} for p in configs]
    return rank(key, configs, shape, arch, sms, limits, res, shared_eff)


def pick(ranked: list, top: int, sample: int, seed: int = 0) -> list:
    """The first ``top`` of the ranking plus ``sample`` drawn at random (seeded) from the rest."""
    rest = ranked[top:]
    return ranked[:top] + random.Random(seed).sample(rest, min(sample, len(rest)))


def tune(key: str, shape=(4096, 4096, 4096), top: int = 16, sample: int = 8, seed: int = 0,
         progress: bool = True, head: int = 96, shared_eff=None) -> dict:
    """Rank (the ``head`` best by estimated registers, when the space is larger, then by nvcc's
    counts), then time the picked configurations live (needs a GPU); returns the tuning document:
    {"provenance", "kernel", "shape", "space", "refused", "ranked", "timed": [{"params", "score",
    "rank", "value", "ratio", ...}], "best", "model_spearman"}."""
    if not gpu.live():
        raise RuntimeError("tune() times kernels: it needs a GPU")
    info = gpu.device_info()
    arch = f"sm_{info['cc'][0]}{info['cc'][1]}"
    ok, refused = candidates(key, shape)
    if len(ok) > head:       # too many to compile-check: keep the head of the estimate's order
        ok = [it["params"] for it in pre_rank(key, ok, shape, arch, info["sms"], shared_eff=shared_eff)[:head]]
    ranked = rank(key, ok, shape, arch=arch, sms=info["sms"],
                  res=resources(key, ok, arch, progress=progress), shared_eff=shared_eff)
    chosen = pick(ranked, top, sample, seed)
    spec = catalog.get(key)
    _pool_map(_build, [(spec.file, spec.entry, spec.defines(it["params"]), tuple(spec.compile_options))
                       for it in chosen], None, f"compile {key}", progress)
    timed = []
    for it in tqdm(chosen, desc=f"time {key}", disable=not progress):
        rec = bench.gemm([(key, it["params"])], tuple(shape))[0]
        timed.append({**rec, "score": it["score"], "rank": ranked.index(it) + 1, "registers": it["registers"]})
    best = max(timed, key=lambda r: r["value"])
    rho = tuning.spearman([r["score"] for r in timed], [r["value"] for r in timed]) if len(timed) > 1 else None
    return {"provenance": results.provenance(), "kernel": key, "shape": list(shape),
            "space": len(ok) + refused, "refused": refused, "ranked": len(ranked), "timed": timed,
            "best": {"params": best["params"], "value": best["value"], "ratio": best["ratio"]},
            "model_spearman": rho}


def save(docs: list, slug: str | None = None) -> str:
    """Write ``results/<slug>-tuning.json`` ({"runs": docs}; slug: this GPU's) and return its path."""
    slug = slug or gpu.slug(gpu.device_info()["name"])
    path = results.RESULTS_DIR / f"{slug}-tuning.json"
    path.write_text(json.dumps({"provenance": docs[0]["provenance"] if docs else {}, "runs": docs}, indent=1) + "\n")
    return str(path)


def best_fitting(key: str, smem_limit: int, doc: dict | None = None, ranked: list | None = None) -> dict | None:
    """The best configuration of ``key`` whose shared memory fits ``smem_limit`` bytes per block:
    the fastest timed one in a tuning document (``doc``: results.artifact("tuning")), else the
    best-ranked of ``ranked``; None when none fits."""
    spec = catalog.get(key)
    if doc:
        for run in doc.get("runs", []):
            if run.get("kernel") != key:
                continue
            fits = [r for r in run.get("timed", []) if spec.smem(r["params"]) <= smem_limit]
            if fits:
                return max(fits, key=lambda r: r["value"])["params"]
    for it in ranked or []:
        if spec.smem(it["params"]) <= smem_limit:
            return it["params"]
    return None
