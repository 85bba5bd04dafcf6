"""Layer 2: every kernel configuration the book ships compiles with nvcc for
sm_80 and sm_90, with no local-memory spills and within the shared-memory
limit. Needs nvcc but no GPU; skipped (with the reason) when nvcc is absent.

A configuration is the catalog entry's defaults plus each point of its
recorded sweep (``Kernel.configs()``). Entries marked as pitfalls (the
``__launch_bounds__`` demonstration) are expected to spill, and the test
checks that they do.
"""
import pytest

from helpers.runtime import catalog, compile as kc

NVCC = kc.nvcc_path()
pytestmark = pytest.mark.skipif(NVCC is None, reason="nvcc not found (PATH, $CUDA_PATH/bin, /usr/local/cuda/bin): "
                                                     "compile checks need the CUDA toolkit's compiler")
SMEM_LIMIT = {"sm_80": 166912, "sm_90": 232448, "sm_90a": 232448}   # per-block opt-in maximum (bytes), CUDA Programming Guide table

CASES = [(key, i, p) for key, spec in catalog.KERNELS.items() for i, p in enumerate(spec.configs())]


def _spills_on_purpose(spec) -> bool:
    return "launch_bounds" in spec.key or "spill" in spec.title.lower()


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("key,i,params", CASES, ids=[f"{k}-{i}" for k, i, _ in CASES])
def test_nvcc_compiles_without_spills(key, i, params, arch):
    spec = catalog.get(key)
    if spec.arch_specific:             # sm_90a machine code (chapter 10): one target, checked once
        if arch != "sm_90":
            pytest.skip(f"{key} is {spec.needs()}: compiled for that target only")
        arch = "sm_90a"
    if spec.smem(params) > SMEM_LIMIT[arch]:
        pytest.skip(f"{key} {params} needs {spec.smem(params)} B of shared memory, more than {arch} allows "
                    f"({SMEM_LIMIT[arch]}); the catalog refuses it at launch there")
    r = kc.nvcc_check(spec.file, spec.entry, spec.defines(params), arch=arch)
    assert r["smem_static"] + spec.smem(params) <= SMEM_LIMIT[arch], f"{key} {params}: too much shared memory {r}"
    assert r["registers"] <= 255
    if _spills_on_purpose(spec):
        assert r["spill_stores"] + r["spill_loads"] > 0, f"{key} is the spill demonstration but does not spill: {r}"
    else:
        assert r["spill_stores"] == 0 and r["spill_loads"] == 0, f"{key} {params} spills on {arch}: {r}"


def test_instrumented_builds_compile():
    for key, spec in catalog.KERNELS.items():
        if spec.owner is not None:
            r = kc.nvcc_check(spec.file, spec.entry, {**spec.defines(spec.defaults), "RECORD_OWNER": 1},
                              arch="sm_90a" if spec.arch_specific else "sm_90")
            assert r["registers"] > 0


def test_compile_error_names_the_line(tmp_path, monkeypatch):
    bad = tmp_path / "99_bad.cu"
    bad.write_text('extern "C" __global__ void k(float* x) {\n  x[0] = undefined_name;\n}\n')
    monkeypatch.setattr(kc, "KERNEL_DIR", tmp_path)
    with pytest.raises(kc.KernelCompileError) as e:
        kc.nvcc_check("99_bad.cu", "k")
    assert "line 2" in str(e.value) and "undefined_name" in str(e.value)
