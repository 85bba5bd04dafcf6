"""A kernel's default parameters on the GPU the book decides for (heaven 8, #10 items 5 and 6).

A catalog entry's ``defaults`` are its *shipped* defaults: what each chapter's recorded sweep
varies and what ``results/<gpu>.json`` records. :func:`resolve` says whether, on the GPU the
book decides for (:func:`helpers.runtime.gpu.target`: this one, the simulated one, or in
recorded mode the recording GPU, ``results.DEFAULT_SLUG``), another configuration replaces
them, read from the autotuner's file ``results/<slug>-tuning.json``
(:mod:`helpers.runtime.tune`). Two cases, tried in this order:

1. **fits**: the shipped default needs more shared memory per block than the GPU allows (an
   L4's 99 KB against ``mma_sync``'s 192 KB). The default becomes the fastest timed
   configuration that fits, from this GPU's own tuning file, else from the recording GPU's
   (labelled as timed there), instead of a refusal. None fits: the refusal stays.
2. **tuned**: the GPU's own tuning file (recorded mode: the recording GPU's) has a run of the
   kernel at the book's shape that timed the default *in the same run* (the run's ``baseline``:
   the default in force when it ran, or a timed entry with the shipped default's parameters):
   the fastest configuration of that run is the default, if it beat the run's default by more
   than :data:`MARGIN` (else that default stands: the shipped one, or an earlier winner). Without such a same-run timing the shipped default stays: ratios from
   different runs (different clocks, another cuBLAS timing) are not compared.

:meth:`helpers.runtime.catalog.Kernel.params` calls :func:`resolve` when asked for the
defaults with no overrides; overrides still apply to the shipped defaults (a recorded sweep
point keeps its meaning). ``GEMM_BOOK_TUNED_DEFAULTS=0`` turns all of this off.

This module imports no catalog (the catalog imports it): it takes the ``Kernel`` as an argument.
"""
from __future__ import annotations

import functools
import json
import os

from . import gpu, results

BOOK_SHAPE = [4096, 4096, 4096]     # the shape the defaults are chosen for
# A tuned winner replaces the default only when it was faster by more than this share in the
# same run: smaller gains are within the spread of repeated timings, and a default that moves
# back and forth with every re-run would change the chapters' numbers for nothing. 3 %: on the
# H200 the same launch timed twice in one run differs by a median of 2 % (chapter 9's zoo,
# "same plan again"), and re-timing the exhaustive pass's top 10 of mma_sync_f16 with the full
# method put the shipped default 0.6 % behind the tuner's pick (results/h200-tuning-exhaustive.json,
# "confirmed"): the second run's 2.1 % (cp_async) and 2.3 % (mma_sync_f16) gains are not kept.
MARGIN = 0.03
SWITCH_VAR = "GEMM_BOOK_TUNED_DEFAULTS"
ARTIFACT = "tuning"


def enabled() -> bool:
    """False when ``GEMM_BOOK_TUNED_DEFAULTS=0``: every kernel keeps its shipped defaults."""
    return os.environ.get(SWITCH_VAR, "1").strip() != "0"


def target_slug(t: dict | None = None) -> str:
    """The results slug of the GPU the book decides for: the simulated one's ("l4"), this
    GPU's (:func:`helpers.runtime.gpu.slug` of its name), or the recording GPU's (recorded mode)."""
    t = gpu.target() if t is None else t
    if t is None:
        return results.DEFAULT_SLUG
    return t.get("slug") or gpu.slug(t["name"])


@functools.lru_cache(maxsize=8)
def _read(path: str, mtime_ns: int) -> dict:
    return json.loads(open(path).read())


def tuning_doc(slug: str) -> dict | None:
    """``results/<slug>-tuning.json`` as a dict (cached until the file changes), or None."""
    p = results.RESULTS_DIR / f"{slug}-{ARTIFACT}.json"
    if not p.is_file():
        return None
    return _read(str(p), p.stat().st_mtime_ns)


def speed(r: dict) -> float:
    """How a measured configuration is compared: its ratio to cuBLAS timed in alternating rounds
    beside it (robust to the clock drifting during a long run), else its value."""
    return r["ratio"] if r.get("ratio") is not None else r["value"]


def run_records(run: dict) -> list:
    """Every measured configuration of one tuning run: its timed entries, plus its ``baseline``
    (the shipped default timed in the same run) when the run has one and it is not among them."""
    recs = [r for r in run.get("timed", []) if r.get("value") is not None]
    base = run.get("baseline")
    if isinstance(base, dict) and base.get("params") and base.get("value") is not None \
            and all(r["params"] != base["params"] for r in recs):
        recs.append(base)
    return recs


def _runs(doc: dict | None, spec) -> list:
    return [r for r in (doc or {}).get("runs", [])
            if r.get("kernel") == spec.key and list(r.get("shape", BOOK_SHAPE)) == BOOK_SHAPE]


def _valid(spec, p: dict, smem_limit: int | None) -> bool:
    """``p`` is a full parameter set of ``spec`` that passes its rules on the book's shape."""
    if set(p) != set(spec.defaults):
        return False
    try:
        spec.validate(p, tuple(BOOK_SHAPE), smem_limit=smem_limit)
        return True
    except ValueError:
        return False


def best_fitting(spec, doc: dict | None, smem_limit: int | None) -> dict | None:
    """The fastest measured record of ``spec`` in a tuning document whose parameters pass the
    kernel's rules within ``smem_limit`` bytes of shared memory per block (None: no limit)."""
    fits = [r for run in _runs(doc, spec) for r in run_records(run) if _valid(spec, r["params"], smem_limit)]
    return max(fits, key=speed) if fits else None


def same_run_winner(spec, doc: dict | None) -> tuple[dict, dict] | None:
    """(winner, baseline) of the first run of ``spec`` in ``doc`` that timed a default: the
    fastest valid configuration of that run and the default it timed beside it (the run's
    ``baseline``: the default in force when it ran, which may itself be an earlier run's winner;
    else a timed entry with the shipped default's parameters). None when no run timed a default
    (then nothing says the winner is faster on equal terms)."""
    for run in _runs(doc, spec):
        recs = run_records(run)
        b = run.get("baseline")
        bp = b.get("params") if isinstance(b, dict) else spec.defaults
        base = next((r for r in recs if r["params"] == bp), None)
        valid = [r for r in recs if _valid(spec, r["params"], None)]
        if base is not None and valid:
            return max(valid, key=speed), base
    return None


def _where(slug: str, doc: dict) -> str:
    prov = doc.get("provenance", {})
    return f"timed on {prov.get('gpu', '?')} ({prov.get('date', '?')}, results/{slug}-{ARTIFACT}.json)"


def _mtime(slug: str) -> int:
    p = results.RESULTS_DIR / f"{slug}-{ARTIFACT}.json"
    return p.stat().st_mtime_ns if p.is_file() else 0


_CACHE: dict = {}


def resolve(spec) -> dict | None:
    """The configuration that replaces ``spec``'s shipped defaults on the GPU the book decides
    for, or None when the shipped defaults stand. Returns {"params", "why" ("fits" or "tuned"),
    "source" (a sentence: which file, which GPU timed it, and how it compares), "value",
    "ratio" (the measurement behind the choice)}. Never raises for a missing or stale file.
    Cached per kernel, GPU and file version (``Kernel.params()`` calls it often)."""
    if not enabled() or spec.op != "gemm":
        return None
    t = gpu.target()
    slug = target_slug(t)
    key = (spec.key, tuple(sorted(spec.defaults.items())), slug, None if t is None else
           (tuple(t["cc"]), t["smem_per_block_max"]), _mtime(slug), _mtime(results.DEFAULT_SLUG))
    if key not in _CACHE:
        _CACHE[key] = _resolve(spec, t, slug)
    r = _CACHE[key]
    return None if r is None else {**r, "params": dict(r["params"])}


def _resolve(spec, t: dict | None, slug: str) -> dict | None:
    if t is not None and not spec.runs_on(t["cc"]):
        return None                          # a capability refusal stays one
    own = tuning_doc(slug)
    limit = t["smem_per_block_max"] if t is not None else None
    if limit is not None and spec.smem(spec.defaults) > limit:
        for s, doc in ((slug, own), (results.DEFAULT_SLUG, tuning_doc(results.DEFAULT_SLUG))):
            best = best_fitting(spec, doc, limit)
            if best is not None:
                return {"params": dict(best["params"]), "why": "fits", "value": best["value"],
                        "ratio": best.get("ratio"),
                        "source": (f"the shipped default needs {spec.smem(spec.defaults) / 1024:.0f} KB of shared "
                                   f"memory per block, this GPU allows {limit / 1024:.0f} KB: the fastest "
                                   f"configuration within that limit {_where(s, doc)}")}
        return None
    won = same_run_winner(spec, own)
    if won is None:
        return None
    best, base = won                         # best >= base: the baseline is one of the run's records
    unit = "of cuBLAS" if best.get("ratio") is not None else "TFLOP/s"
    if best["params"] != base["params"] and speed(best) <= (1 + MARGIN) * speed(base):
        if base["params"] == spec.defaults:  # not clearly faster: the run's default stands
            return None
        return {"params": dict(base["params"]), "why": "tuned", "value": base["value"], "ratio": base.get("ratio"),
                "source": (f"the default the autotuner's search started from, {_where(slug, own)}: the run's fastest "
                           f"configuration ran at {speed(best):.4g} against its {speed(base):.4g} {unit}, not more "
                           f"than {MARGIN:.0%} faster, so it stands")}
    if best["params"] == spec.defaults:
        return None
    what = "the shipped default's" if base["params"] == spec.defaults else "the default of that run's"
    return {"params": dict(best["params"]), "why": "tuned", "value": best["value"], "ratio": best.get("ratio"),
            "source": (f"the autotuner's winner, {_where(slug, own)}: {speed(best):.4g} against {what} "
                       f"{speed(base):.4g} {unit} in the same run")}


def why_shipped(spec) -> str:
    """Why ``spec`` keeps its shipped defaults on the GPU the book decides for (when
    :func:`resolve` returns None), in a few words."""
    t = gpu.target()
    slug = target_slug(t)
    doc = tuning_doc(slug)
    if not enabled():
        return f"{SWITCH_VAR}=0"
    if t is not None and not spec.runs_on(t["cc"]):
        return f"this GPU cannot run it at all: it needs {spec.needs()}"
    if t is not None and spec.smem(spec.defaults) > t["smem_per_block_max"]:
        return "none of the configurations timed so far fits this GPU's shared memory"
    if doc is None:
        return f"results/{slug}-{ARTIFACT}.json does not exist"
    if not _runs(doc, spec):
        return f"results/{slug}-{ARTIFACT}.json has no run of it at {'x'.join(map(str, BOOK_SHAPE))}"
    if same_run_winner(spec, doc) is None:
        return (f"the run in results/{slug}-{ARTIFACT}.json did not time the default beside its "
                "configurations, and results of different runs are not compared")
    return (f"no configuration of the run in results/{slug}-{ARTIFACT}.json beat the default by more than "
            f"{MARGIN:.0%} in that run")


def explain(spec) -> str:
    """One line: which defaults ``spec`` uses on the GPU the book decides for, and why."""
    r = resolve(spec)
    if r is None:
        return f"{spec.key}: its shipped defaults ({why_shipped(spec)})"
    diff = {k: v for k, v in r["params"].items() if spec.defaults.get(k) != v}
    return f"{spec.key}: " + " ".join(f"{k}={v}" for k, v in diff.items()) + f" ({r['source']})"


def lookup(kernel: str, params: dict, dtype: str, shape, slug: str = results.DEFAULT_SLUG) -> dict | None:
    """The record of (kernel, params, dtype, shape) among the configurations the autotuner timed
    (``results/<slug>-tuning.json``), stamped with that run's date and commit and ``"from"``
    the file; None when it was not timed. :func:`helpers.runtime.bench`'s second source after
    :func:`helpers.runtime.results.lookup` (the configuration a tuned default names is recorded here)."""
    doc = tuning_doc(slug)
    for run in (doc or {}).get("runs", []):
        if run.get("kernel") != kernel:
            continue
        for r in run_records(run):
            if (r.get("params") == params and r.get("dtype", dtype) == dtype
                    and list(r.get("shape", run.get("shape", []))) == list(shape)):
                prov = run.get("provenance") or doc.get("provenance", {})
                return {**{k: v for k, v in r.items() if k not in ("source",)},
                        "recorded": {"date": prov.get("date"), "commit": prov.get("commit")},
                        "from": f"results/{slug}-{ARTIFACT}.json"}
    return None
