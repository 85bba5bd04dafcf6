"""The results contract (docs/architecture.md): every recorded run is a
:class:`helpers.runtime.results.Record`, and every Nsight Compute artifact has
the results file's provenance layout."""
from __future__ import annotations

import dataclasses

import pytest

from helpers.runtime import results

CONTRACT = ("chapter", "kernel", "params", "dtype", "shape", "metric", "value",
            "reference", "reference_value", "ratio", "rel_err")


def test_record_fields_are_the_contract_and_optional_fields_drop_out():
    names = [f.name for f in dataclasses.fields(results.Record)]
    assert tuple(names[:len(CONTRACT)]) == CONTRACT
    r = results.Record(chapter=5, kernel="cp_async", params={"BM": 128}, dtype="float32", shape=[1, 2, 3],
                       metric="TFLOP/s", value=1.0, reference="cuBLAS", reference_value=2.0, ratio=0.5,
                       rel_err=None, source="live").as_dict()
    assert set(r) == set(CONTRACT) | {"source"} and r["rel_err"] is None


def test_every_recorded_run_is_a_record():
    fields = {f.name for f in dataclasses.fields(results.Record)}
    data = results.load()
    assert data["runs"], "the results file has no runs"
    for run in data["runs"]:
        results.Record(**{k: v for k, v in run.items() if k in fields})     # TypeError if a key is missing
        assert run["ratio"] is None or run["reference_value"] is None or \
            run["ratio"] == pytest.approx(run["value"] / run["reference_value"], rel=2e-3)


@pytest.mark.parametrize("name", ["banks", "ldmatrix"])
def test_artifacts_share_the_provenance_layout(name):
    doc = results.artifact(name)
    assert doc is not None, f"results/{results.DEFAULT_SLUG}-{name}.json is committed and must load"
    prov = doc["provenance"]
    assert set(results.load()["provenance"]) <= set(prov), f"{name}: provenance lacks the results file's keys"
    assert results.artifact_where(doc, name).startswith(f"recorded on {prov['gpu']}")
    assert results.artifact("no-such-artifact") is None
