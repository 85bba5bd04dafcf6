"""Parameter sweeps, measured: every configuration of a kernel's recorded sweep.

* :func:`run` measures a kernel over the catalog's recorded sweep (live), or
  reads those records (recorded mode);
* :func:`sweep_points`: one slice of a sweep (the points that change only
  some parameters).

The figure is :func:`helpers.figures.sweep.figure`; the live ipywidgets
slider is :func:`helpers.chapters.common.live_slider`. This module displays
nothing: a progress bar is the caller's (``progress``, a ``tqdm`` in a live
notebook: :func:`helpers.chapters.common.show_sweep`).
"""
from __future__ import annotations

from . import bench, catalog, launch


def run(key: str, shape, points=None, progress=None) -> list:
    """Measure (or read) kernel ``key`` at every configuration of its sweep.

    ``points``: list of partial parameter dicts; default the catalog's sweep.
    ``progress``: None, or a function that wraps the list of (key, params) items
    and yields them, e.g. ``tqdm.auto.tqdm`` (one step per configuration).
    Live records also carry ``resources`` (registers, shared memory, spills,
    occupancy of the compiled kernel)."""
    spec = catalog.get(key)
    pts = points if points is not None else spec.configs()
    items = [(key, {**spec.defaults, **pt}) for pt in pts]
    measure = bench.gemm if spec.op == "gemm" else bench.transpose
    recs = []
    for it in (items if progress is None else progress(items)):   # one config at a time: a failure names it
        r = measure([it], shape)[0]
        if r.get("source") == "live":
            r["resources"] = launch.prepare(key, shape, **it[1]).resources()
        recs.append(r)
    return recs


def sweep_points(key: str, names) -> list[dict]:
    """The configurations of catalog entry ``key``'s recorded sweep (defaults
    included) that differ from the defaults only in ``names``: one slice of
    the sweep, to draw with short labels (``sweep.run(key, shape, points=...)``)."""
    spec = catalog.get(key)
    return [c for c in spec.configs() if all(c[k] == spec.defaults[k] for k in c if k not in names)]
