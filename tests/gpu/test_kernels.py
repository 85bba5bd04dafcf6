"""GPU suite: every catalog kernel on many shapes, every reachable slider
configuration, and the index models against the instrumented kernels.

Skipped without a GPU. Run: ``pytest tests/gpu`` (scripts/gpu_suite.sh does).
A kernel must either compute the right answer (relative error within its
dtype's tolerance, no NaN left from the poisoned output) or refuse the shape
before launch with a ValueError; a CUDA error fails the test.
"""
from __future__ import annotations

import itertools
import os

import numpy as np
import pytest

from helpers.runtime import catalog, gpu, launch, verify

pytestmark = pytest.mark.skipif(not gpu.live(), reason="needs a CUDA GPU (live mode)")

GEMM_SHAPES = [(1000, 1000, 1000), (1023, 1025, 999), (30000, 64, 64), (35, 79, 19), (1, 1, 1),
               (17, 33, 260)] + sorted(set(itertools.permutations((64, 128, 256))))
TRANSPOSE_SHAPES = [(4096, 4096), (1000, 1000), (1023, 1025), (35, 79), (30000, 64), (64, 30000), (1, 1)]
MAX_COMBOS = int(os.environ.get("GEMM_BOOK_MAX_COMBOS", "48"))   # slider combinations tested per kernel


def _gemm_once(key, shape, params):
    cp = gpu.cupy()
    spec = catalog.get(key)
    M, N, K = shape
    A = verify.random_matrix((M, K), spec.dtype)
    B = verify.random_matrix((K, N), spec.dtype)
    Bin = cp.ascontiguousarray(B.T) if spec.layout == "NT" else B
    C = cp.empty((M, N), dtype=verify.np_dtype(spec.out_dtype))
    verify.poison(C)
    launch.gemm(key, A, Bin, C, **params)
    cp.cuda.Device().synchronize()
    return verify.check(C, verify.reference_gemm(A, B), spec.dtype, what=f"{key} {params} {shape}")


def _transpose_once(key, shape, params):
    cp = gpu.cupy()
    spec = catalog.get(key)
    X = verify.random_matrix(shape)
    out = cp.empty(shape if spec.op == "copy" else shape[::-1], cp.float32)
    verify.poison(out)
    launch.transpose(key, X, out, **params)
    expect = X if spec.op == "copy" else X.T
    assert int((out != expect).sum()) == 0, f"{key} {params} {shape}: wrong or unwritten elements"


def _run(key, shape, params):
    spec = catalog.get(key)
    try:
        if spec.op == "gemm":
            _gemm_once(key, shape, params)
        else:
            _transpose_once(key, shape, params)
        return "ok"
    except ValueError as e:
        # refused before launch: the message must name a parameter and a rule
        assert "=" in str(e) and ":" in str(e), f"unclear refusal: {e}"
        return "refused"


def _pitfall(spec) -> bool:
    return "pitfall" in spec.title.lower() or spec.key.endswith("_pitfall") or "wrong" in spec.key


# chapter 11's e4m3 kernels take bytes and scales, not (A, B) of a float dtype: tests/gpu/test_fp8_gpu.py
KEYS = [k for k, s in catalog.KERNELS.items() if not _pitfall(s) and not s.dtype.startswith("float8")]


def _expected(spec, shape, params) -> str:
    """What the catalog's rules say ``shape`` gets at ``params``: "ok" or "refused"."""
    try:
        spec.validate(spec.params(**params), shape, smem_limit=gpu.device_info()["smem_per_block_optin"])
    except ValueError:
        return "refused"
    return "ok"


@pytest.mark.parametrize("key", KEYS)
def test_shapes(key):
    """Every shape, one by one: a shape the catalog's rules accept runs and is right; a shape
    they reject is refused before launch with a clear message. No shape may do anything else."""
    spec = catalog.get(key)
    shapes = GEMM_SHAPES if spec.op == "gemm" else TRANSPOSE_SHAPES
    outcome = {s: _run(key, s, {}) for s in shapes}
    wrong = {s: f"{got}, the rules say {_expected(spec, s, {})}"
             for s, got in outcome.items() if got != _expected(spec, s, {})}
    assert not wrong, f"{key}: {wrong}"
    assert "ok" in outcome.values(), f"{key} refused every shape: {outcome}"


def _reachable(spec) -> list:
    return spec.slider_configs(MAX_COMBOS, smem_limit=gpu.device_info()["smem_per_block_optin"])


@pytest.mark.parametrize("key", KEYS)
@pytest.mark.parametrize("size", [256, 4096])
def test_every_slider_config(key, size):
    spec = catalog.get(key)
    shape = (size,) * (3 if spec.op == "gemm" else 2)
    configs = _reachable(spec)
    assert configs, f"{key}: no valid slider configuration"
    for p in configs:
        if size == 4096 and spec.op == "gemm" and spec.key == "naive_xfirst" and p != spec.defaults:
            continue   # ~0.3 s per run; its other configs are covered at 256
        assert _run(key, shape, p) == "ok", f"{key} {p} refused at {shape}"


OWNED = [k for k in KEYS if catalog.get(k).owner is not None]
# Not multiples of the tiles (edges), a multiple (interior only), and a tall one; the last two
# are what a kernel with divisibility rules can still take.
OWNER_SHAPES = [(70, 100, 20), (128, 128, 32), (257, 64, 64), (256, 256, 64), (512, 256, 128)]


@pytest.mark.parametrize("key", OWNED)
def test_owner_model_matches_kernel(key):
    """The owner model equals what the instrumented kernel records, on every shape of
    OWNER_SHAPES its rules accept; at least one shape must be compared."""
    spec = catalog.get(key)
    compared = []
    for shape in OWNER_SHAPES:
        p = spec.params()
        try:
            spec.validate(p, shape)
        except ValueError:
            continue
        compared.append(shape)
        got = launch.record_owner(key, shape)
        want = spec.owner(p, shape)
        bad = np.argwhere(got != want)
        assert bad.size == 0, (f"{key} {shape}: model and kernel disagree at {len(bad)} elements, "
                               f"first C{tuple(bad[0])}: kernel {got[tuple(bad[0])]}, model {want[tuple(bad[0])]}")
    assert compared, f"{key}: its rules refuse every shape of {OWNER_SHAPES}: nothing was compared"


def test_bad_slider_value_leaves_context_usable():
    """A refused configuration raises ValueError and the next launch still works."""
    with pytest.raises(ValueError, match="threads per block"):
        launch.prepare("naive_yfirst", (64, 64, 64), BLOCK_X=64, BLOCK_Y=32)   # 2048 threads
    assert _run("naive_yfirst", (64, 64, 64), {}) == "ok"
