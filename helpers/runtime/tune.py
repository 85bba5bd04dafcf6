"""The autotuner of heaven 8: prune by the catalog's rules, rank by a cost model, compile, time.

Steps, for one catalog kernel on one shape:

1. :func:`candidates`: every combination of the kernel's slider choices
   (:func:`helpers.models.tuning.space`), pruned by ``Kernel.validate`` with this
   GPU's per-block shared-memory limit: the rules mirror the kernel's
   ``static_assert``s, so nothing refused here is ever compiled.
2. :func:`rank`: each survivor's registers and spills from ``nvcc -Xptxas -v``
   (:func:`helpers.runtime.compile.nvcc_check`, no GPU needed, cached), spilling
   configurations dropped, the rest ordered by :func:`helpers.models.tuning.score`.
3. :func:`tune` (needs a GPU): compiles the top of the ranking, a seeded random
   sample of the rest and the current default in parallel into CuPy's disk cache,
   times each against cuBLAS in the same run (:func:`helpers.runtime.bench.gemm`:
   alternating rounds), then refines around the fastest (:func:`neighbours`), re-times
   the few fastest side by side (:func:`final_race`) and picks the race's winner, with
   ``tqdm`` progress bars, and returns the tuning document (:func:`save` writes
   ``results/<gpu>-tuning.json`` with provenance). :func:`exhaustive` times every
   valid configuration once, to measure how close the tuner gets.
4. :func:`best_fitting`: the best timed configuration that fits a GPU's
   shared-memory limit, from a tuning document, else the best-ranked one.

First GPU run (H200, 2026-12-01, before the baseline, the tile-diverse head and the
refinement existed): the FP32 model ranked a flat plateau (every head configuration a
64 x 64 tile, Spearman -0.44) and the tuner's best was 0.83 of cuBLAS against the
default's 0.94; mma_sync 0.56 (Spearman 0.43). Hence those three additions.
"""
from __future__ import annotations

import json
import multiprocessing
import os
import random
import statistics

from tqdm.auto import tqdm

from helpers.models import tuning

from . import bench, catalog, compile as kc, gpu, launch, results, verify

# FLOP per byte of L2 -> SM traffic the math pipe needs (peak math rate / L2 bandwidth),
# per input dtype. Leads, not measurements: H100/H200 data-sheet math rates (FP32 about
# 67 TFLOP/s; dense fp16/bf16 mma.sync reaches about 0.6 of cuBLAS's ~750, see chapter 7)
# over an L2 bandwidth of about 5.5 TB/s.
I_NEED = {"float32": 67e12 / 5.5e12, "float16": 450e12 / 5.5e12, "bfloat16": 450e12 / 5.5e12}


def speed(r: dict) -> float:
    """What "faster" means for the tuner: the ratio to cuBLAS timed beside the configuration in
    alternating rounds (robust to the clock drifting over a long run), else TFLOP/s."""
    return r["ratio"] if r.get("ratio") is not None else r["value"]


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
    except Exception as e:
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


def diverse_head(ranked: list, head: int, keys=("BM", "BN")) -> list:
    """The first ``head`` of ``ranked`` taken round-robin over groups of equal ``keys`` (the
    block tile), best-scored first in each group: a flat model (many equal scores) then
    keeps every tile shape in play instead of the first few ties. Order inside the result:
    by score, as ``ranked``."""
    groups: dict = {}
    for it in ranked:
        groups.setdefault(tuple(it["params"].get(k) for k in keys), []).append(it)
    out, queues = [], list(groups.values())
    while len(out) < head and any(queues):
        for q in queues:
            if q and len(out) < head:
                out.append(q.pop(0))
    return sorted(out, key=lambda it: -it["score"])


def neighbours(p: dict, choices: dict) -> list:
    """Every configuration one step away from ``p``: one parameter moved to the next lower
    or higher value of its slider choices (``choices``: {name: values}), the rest equal."""
    out = []
    for name, vals in choices.items():
        vals = list(vals)
        if p.get(name) not in vals:
            continue
        i = vals.index(p[name])
        out += [{**p, name: vals[j]} for j in (i - 1, i + 1) if 0 <= j < len(vals)]
    return out


def pick(ranked: list, top: int, sample: int, seed: int = 0) -> list:
    """The first ``top`` of the ranking plus ``sample`` drawn at random (seeded) from the rest."""
    rest = ranked[top:]
    return ranked[:top] + random.Random(seed).sample(rest, min(sample, len(rest)))


def _valid(spec, p: dict, shape, smem_limit: int) -> bool:
    try:
        spec.validate(p, tuple(shape), smem_limit=smem_limit)
        return True
    except ValueError:
        return False


def _time(key: str, params: list, shape, progress: bool, rounds: int = 3, budget_ms: float = 400.0,
          chunk: int = 1, desc: str = "time") -> list:
    """Compile ``params`` in parallel (CuPy's disk cache), then time each against cuBLAS in
    the same run (:func:`helpers.runtime.bench.gemm`: fresh random inputs per chunk, every
    result checked against float64 first). Returns bench records, in order."""
    spec = catalog.get(key)
    _pool_map(_build, [(spec.file, spec.entry, spec.defines(p), tuple(spec.compile_options)) for p in params],
              None, f"compile {key}", progress)
    recs = []
    with tqdm(total=len(params), desc=f"{desc} {key}", disable=not progress) as bar:
        for i in range(0, len(params), chunk):
            part = params[i:i + chunk]
            try:
                recs += bench.gemm([(key, p) for p in part], tuple(shape), rounds=rounds, budget_ms=budget_ms)
            except (ValueError, verify.WrongResult):   # find which one, keep the others
                for p in part:
                    try:
                        recs += bench.gemm([(key, p)], tuple(shape), rounds=rounds, budget_ms=budget_ms)
                    except (ValueError, verify.WrongResult) as e:
                        recs.append({"params": p, "value": 0.0, "ratio": 0.0,
                                     "error": f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"})
            bar.update(len(part))
    return recs


def race(key: str, params: list, shape=(4096, 4096, 4096), rounds: int = 5, budget_ms: float = 400.0,
         progress: bool = True) -> list:
    """Time ``params`` against each other: ``rounds`` rounds, and in each round every configuration
    once against its own cuBLAS timing (:func:`helpers.runtime.bench.gemm` with one round, checked
    against float64), in an order rotated by one per round, so that no configuration always runs
    first on a cooler GPU. Per configuration: ``ratio`` = median of its per-round ratios to cuBLAS,
    ``value`` and ``ms`` = medians of its per-round TFLOP/s and time, ``rounds``, ``round_ratios``.

    Why: a single pass measures each configuration at one moment; the top of such a pass tends to
    be the configurations that were fast *and* lucky (under its power cap the H200 of this book
    reads one mma.sync configuration several per cent apart between short rounds; the recorded
    races' round_ratios show it), so the pass's winner is biased upwards. Re-timing the leaders
    side by side takes that bias out of the choice. Returns bench records, in ``params``'
    order. Raises ValueError for ``rounds`` < 1 (and whatever bench.gemm raises)."""
    if rounds < 1:
        raise ValueError(f"rounds = {rounds!r}: must be at least 1")
    spec = catalog.get(key)
    _pool_map(_build, [(spec.file, spec.entry, spec.defines(p), tuple(spec.compile_options)) for p in params],
              None, f"compile {key}", progress)
    per = [[] for _ in params]
    with tqdm(total=rounds * len(params), desc=f"race {key}", disable=not progress) as bar:
        for r in range(rounds):
            order = [(i + r) % len(params) for i in range(len(params))]
            for i in order:
                per[i].append(bench.gemm([(key, params[i])], tuple(shape), rounds=1, budget_ms=budget_ms / rounds)[0])
                bar.update(1)
    out = []
    for recs in per:
        med = lambda f: statistics.median(f(x) for x in recs)      # noqa: E731
        out.append({**recs[0], "ratio": round(med(lambda x: x["ratio"]), 4), "value": round(med(lambda x: x["value"]), 3),
                    "ms": round(med(lambda x: x["ms"]), 5) if all(x.get("ms") for x in recs) else recs[0].get("ms"),
                    "rounds": rounds, "round_ratios": [x["ratio"] for x in recs]})
    return out


def final_race(key: str, timed: list, shape, finalists: int = 4, rounds: int = 5, progress: bool = True,
               max_races: int = 3) -> int:
    """Re-time the ``finalists`` fastest of ``timed`` (tuning entries, changed in place) with
    :func:`race`: their ``ratio``, ``value``, ``ms`` and ``rounds`` become the race's, the search's
    numbers are kept as ``search_ratio`` and ``search_value``, and ``raced`` is set. Repeated (all
    current leaders raced together again) while the fastest ``finalists`` include one never raced,
    at most ``max_races`` times: unless that cap is reached with an unraced configuration on top,
    the one the tuner returns has been timed in a race (the tuning document's "final" says how
    many races ran). Returns the number of races run."""
    for n in range(max_races):
        lead = sorted(timed, key=speed, reverse=True)[:finalists]
        if n and all(r.get("raced") for r in lead):
            return n
        for r, rec in zip(lead, race(key, [r["params"] for r in lead], shape, rounds=rounds, progress=progress)):
            if not r.get("raced"):
                r["search_ratio"], r["search_value"] = r.get("ratio"), r.get("value")
            r.update(ratio=rec["ratio"], value=rec["value"], ms=rec.get("ms"), rounds=rounds,
                     round_ratios=rec["round_ratios"], raced=True)
    return max_races


def tune(key: str, shape=(4096, 4096, 4096), top: int = 16, sample: int = 8, seed: int = 0,
         progress: bool = True, head: int = 96, shared_eff=None, local_steps: int = 3,
         finalists: int = 4, final_rounds: int = 5) -> dict:
    """Search ``key``'s configurations on ``shape`` live (needs a GPU); returns the tuning document.

    1. prune (:func:`candidates`); when more than ``head`` survive, keep a head of the
       estimate's order spread over block tiles (:func:`diverse_head`);
    2. rank by the model with nvcc's register counts (:func:`rank`);
    3. time the ``top`` of the ranking, a seeded random ``sample`` of the rest and the
       kernel's current default (the baseline: a tuner must never do worse);
    4. local refinement, up to ``local_steps`` times: time the untimed :func:`neighbours`
       of the fastest so far; stop when none is faster;
    5. a final race (:func:`final_race`): the ``finalists`` fastest timed side by side in
       ``final_rounds`` rotated rounds (``finalists`` 0: none); the winner of the race is the pick.

    Document: {"provenance", "kernel", "shape", "space" (every combination of the slider
    choices), "refused", "ranked", "timed": [{"params", "score", "rank", "value", "ratio",
    "stage" ("model", "sample", "baseline" or "local"), "raced", "search_ratio", ...}], "best",
    "baseline", "final" ({"finalists", "rounds", "races"}), "model_spearman" (over the timed
    configurations the model ranked, by their TFLOP/s)}."""
    if not gpu.live():
        raise RuntimeError("tune() times kernels: it needs a GPU")
    info = gpu.device_info()
    arch = f"sm_{info['cc'][0]}{info['cc'][1]}"
    spec = catalog.get(key)
    smem_limit = launch.device_limits()["smem_per_block_max"]
    ok, refused = candidates(key, shape)
    space = len(ok) + refused
    if len(ok) > head:       # too many to compile-check: a head of the estimate's order, every tile shape kept
        ok = [it["params"] for it in
              diverse_head(pre_rank(key, ok, shape, arch, info["sms"], shared_eff=shared_eff), head)]
    ranked = rank(key, ok, shape, arch=arch, sms=info["sms"],
                  res=resources(key, ok, arch, progress=progress), shared_eff=shared_eff)
    chosen = pick(ranked, top, sample, seed)
    stages = ["model"] * min(top, len(chosen)) + ["sample"] * (len(chosen) - min(top, len(chosen)))
    default = spec.params()
    if default not in [it["params"] for it in chosen]:
        chosen.append(next((it for it in ranked if it["params"] == default),
                           {"params": default, "score": None, "registers": None}))
        stages.append("baseline")
    position = {json.dumps(it["params"], sort_keys=True): n + 1 for n, it in enumerate(ranked)}

    def entry(it, rec, stage):
        return {**rec, "score": it.get("score"), "rank": position.get(json.dumps(it["params"], sort_keys=True)),
                "registers": it.get("registers"), "stage": stage}

    timed = [entry(it, rec, st) for it, rec, st in
             zip(chosen, _time(key, [it["params"] for it in chosen], shape, progress), stages)]
    for _ in range(local_steps):
        best = max(timed, key=speed)
        seen = [r["params"] for r in timed]
        near = [q for q in neighbours(best["params"], spec.slider_choices)
                if q not in seen and _valid(spec, q, shape, smem_limit)]
        if not near:
            break
        scored = {json.dumps(it["params"], sort_keys=True): it for it in ranked}
        items = [scored.get(json.dumps(q, sort_keys=True), {"params": q, "score": None, "registers": None})
                 for q in near]
        timed += [entry(it, rec, "local") for it, rec in zip(items, _time(key, near, shape, progress, desc="refine"))]
        if max(speed(r) for r in timed) <= speed(best):
            break
    races = final_race(key, timed, shape, finalists, final_rounds, progress) if finalists else 0
    best = max(timed, key=speed)
    base = next(r for r in timed if r["params"] == default)
    scored = [r for r in timed if r["score"] is not None]
    rho = tuning.spearman([r["score"] for r in scored], [r["value"] for r in scored]) if len(scored) > 1 else None
    return {"provenance": results.provenance(), "kernel": key, "shape": list(shape),
            "space": space, "refused": refused, "ranked": len(ranked), "timed": timed,
            "best": {"params": best["params"], "value": best["value"], "ratio": best["ratio"]},
            "baseline": {"params": default, "value": base["value"], "ratio": base["ratio"]},
            "final": {"finalists": finalists, "rounds": final_rounds, "races": races},
            "model_spearman": rho}


def exhaustive(key: str, shape=(4096, 4096, 4096), progress: bool = True, budget_ms: float = 60.0,
               chunk: int = 16) -> dict:
    """Time every configuration the rules accept, once (one round against cuBLAS, about
    ``budget_ms`` per pair), to measure the tuner's accuracy; needs a GPU. Spilling builds
    are timed too (they are valid, only slow). Returns {"provenance", "kernel", "shape",
    "space", "refused", "exhaustive": True, "timed": [bench records], "best"}."""
    if not gpu.live():
        raise RuntimeError("exhaustive() times kernels: it needs a GPU")
    ok, refused = candidates(key, shape)
    recs = _time(key, ok, shape, progress, rounds=1, budget_ms=budget_ms, chunk=chunk, desc="exhaustive")
    best = max(recs, key=lambda r: r["value"])
    return {"provenance": results.provenance(), "kernel": key, "shape": list(shape), "space": len(ok) + refused,
            "refused": refused, "exhaustive": True, "timed": recs,
            "best": {"params": best["params"], "value": best["value"], "ratio": best["ratio"]}}


def confirm(key: str, params: list, shape=(4096, 4096, 4096), progress: bool = True,
            rounds: int = 3) -> list:
    """Re-time ``params`` (e.g. the top of an exhaustive single-round pass and the tuner's
    pick) side by side with :func:`race` (``rounds`` rotated rounds, each configuration against
    its own cuBLAS timing in every round): a single short round can flatter one configuration by
    10 %, so the accuracy comparison uses these numbers. Returns bench records, in order.
    Raises RuntimeError without a GPU, ValueError for a bad ``rounds``."""
    if not gpu.live():
        raise RuntimeError("confirm() times kernels: it needs a GPU")
    return race(key, params, shape, rounds=rounds, progress=progress)


def accuracy(tuned: dict, full: dict) -> list:
    """How close the tuner came, per kernel found in both documents (``tuned``: a
    ``<gpu>-tuning.json``, ``full``: a ``<gpu>-tuning-exhaustive.json``). The comparison uses
    the exhaustive file's ``confirmed`` records when it has them (its top re-timed with the
    tuner's pick, full method, one session), and gives a second row for ``reconfirmed`` (the
    same comparison timed again in a later session), else its single-round pass. "Best", the
    pick and the rank go by :func:`speed`, the ratio to cuBLAS timed in the same run (each
    configuration against its own cuBLAS timing), so TFLOP/s alone may order them otherwise.
    Rows: {"kernel", "valid configurations", "tuner timed", "share timed", "compared in",
    "best params", "best (of cuBLAS)", "best TFLOP/s", "tuner's pick (of cuBLAS)",
    "tuner's pick TFLOP/s", "runner-up (of cuBLAS)" (the second of that run), "pick / best",
    "rank of the pick"}."""
    rows = []
    for ex in full.get("runs", []):
        run = next((r for r in tuned.get("runs", []) if r["kernel"] == ex["kernel"]), None)
        if run is None:
            continue

        def how(n, src):
            rounds = sorted({r.get("rounds") for r in src if r.get("rounds")})
            return f"run {n}: {len(src)} configurations, {'/'.join(map(str, rounds)) or '?'} rounds each"
        sources = [(ex["timed"], "the exhaustive pass (one short round each)")]
        if ex.get("confirmed"):
            sources = [(ex["confirmed"], how(1, ex["confirmed"]))]
            if ex.get("reconfirmed"):
                sources.append((ex["reconfirmed"], how(2, ex["reconfirmed"])))
        valid = ex["space"] - ex["refused"]
        want = json.dumps(max(run["timed"], key=speed)["params"], sort_keys=True)
        for src, label in sources:
            pick = {json.dumps(r["params"], sort_keys=True): r for r in src}.get(want)
            order = sorted(src, key=speed, reverse=True)
            best = order[0]
            rows.append({"kernel": ex["kernel"], "valid configurations": valid, "tuner timed": len(run["timed"]),
                         "share timed": round(len(run["timed"]) / valid, 3), "compared in": label,
                         "best params": best["params"], "best (of cuBLAS)": round(speed(best), 4),
                         "best TFLOP/s": best["value"],
                         "tuner's pick (of cuBLAS)": round(speed(pick), 4) if pick else None,
                         "tuner's pick TFLOP/s": pick["value"] if pick else None,
                         "runner-up (of cuBLAS)": round(speed(order[1]), 4) if len(order) > 1 else None,
                         "pick / best": round(speed(pick) / speed(best), 4) if pick else None,
                         "rank of the pick": (1 + sum(speed(r) > speed(pick) for r in src)) if pick else None})
    return rows


def save(docs: list, slug: str | None = None, name: str = "tuning") -> str:
    """Write ``results/<slug>-<name>.json`` ({"runs": docs}; slug: this GPU's) and return its path."""
    slug = slug or gpu.slug(gpu.device_info()["name"])
    path = results.RESULTS_DIR / f"{slug}-{name}.json"
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
                return max(fits, key=speed)["params"]
    for it in ranked or []:
        if spec.smem(it["params"]) <= smem_limit:
            return it["params"]
    return None
