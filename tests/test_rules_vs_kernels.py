"""The catalog's rules and the kernels' compile-time checks agree (layer 2, CPU).

Each kernel file states its validity tests as ``static_assert``s (for
kernels/05_register_tiling.cu, per entry point: the build of an entry defines
``ENTRY_<name>``). The catalog entries (helpers/chapters/) state the same rules
in Python so that a slider value is refused before anything compiles. This test
ties the two, with the kernel as the reference:

* every slider-reachable configuration (the product of ``choices``) that the
  catalog accepts passes every ``static_assert`` of its entry: a configuration
  the kernel rejects is refused by the catalog. The static_asserts are
  evaluated by the C preprocessor over the real kernel source (each
  ``static_assert(cond, msg);`` becomes ``#if !(cond)``, in its own #if
  context), which covers thousands of configurations in seconds;
* a few of them, accepted and rejected, are compiled for real with nvcc
  (front end only) to show that the static_asserts fire in the compiler too.

Skipped, with the reason, when cpp or nvcc is absent.
"""
from __future__ import annotations

import dataclasses
import itertools
import re
import shutil
import subprocess

import pytest

from helpers.runtime import catalog, compile as kc

CPP = shutil.which("cpp")
SHAPE = {"gemm": (4096, 4096, 4096), "transpose": (4096, 4096), "copy": (4096, 4096)}
_ASSERT = re.compile(r"^[ \t]*static_assert\((?P<cond>.*?),\s*\"(?P<msg>(?:[^\"\\]|\\.)*)\"\s*\);",
                     re.S | re.M)


def _preprocessor_names(file: str) -> set:
    """Names the preprocessor knows in ``file``: its #defines (parameter defaults
    included) and every parameter a catalog entry of that file passes as -D."""
    names = set(re.findall(r"^[ \t]*#define\s+(\w+)", kc.source(file), re.M))
    for spec in catalog.KERNELS.values():
        if spec.file == file:
            names |= set(spec.defaults) | set(spec.fixed)
    return names


def _checker_source(file: str) -> tuple[str, list[str]]:
    """The kernel source, pasted includes and all, with every static_assert over
    preprocessor names turned into a preprocessor test that prints
    ``ASSERT_FAILED_<i>``; system #includes are dropped (no condition depends on
    them). A static_assert that names anything else (a template parameter, as in
    ``Float4Loads<THREADS>`` of kernels/05) is a C++-level check the compiler makes
    when the template is instantiated; it is left as text, and the entry's own
    static_assert over the -D values covers it. Returns (source, messages)."""
    src = kc.source(file)
    known = _preprocessor_names(file)
    msgs: list[str] = []

    def repl(m):
        cond = " ".join(m.group("cond").split())
        if not set(re.findall(r"[A-Za-z_]\w*", cond)) <= known | {"defined"}:
            return m.group(0)
        msgs.append(m.group("msg"))
        return f"#if !({cond})\nASSERT_FAILED_{len(msgs) - 1}\n#endif"

    out = _ASSERT.sub(repl, src)
    out = re.sub(r"^[ \t]*#include\s*<[^>]+>.*$", "", out, flags=re.M)
    return out, msgs


def _failed_asserts(file: str, entry: str, configs: list[dict], checker: str, msgs: list[str]) -> list[list[str]]:
    """For each -D set of ``configs``: the messages of the static_asserts the
    build of ``entry`` would fail. One cpp run per batch of configurations: each
    gets its parameters #defined, then the checker source."""
    out = []
    # The headers' include guards (#ifndef G / #define G, no value) are undefined before
    # each configuration, or every copy of the source after the first would skip them.
    guards = re.findall(r"^[ \t]*#ifndef[ \t]+(\w+)[ \t]*\n[ \t]*#define[ \t]+\1[ \t]*$", checker, re.M)
    for i in range(0, len(configs), 400):
        batch = configs[i:i + 400]
        text = [f"#define ENTRY_{entry} 1"]
        for j, d in enumerate(batch):
            text += [f"#undef {k}" for k in d] + [f"#define {k} {v}" for k, v in d.items()]
            text += [f"#undef {g}" for g in guards]
            text += [f"CONFIG_{j}_BEGIN", checker]
        r = subprocess.run([CPP, "-P", "-w"], input="\n".join(text), capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, f"cpp failed on {file}: {r.stderr[-2000:]}"
        parts = re.split(r"\bCONFIG_(\d+)_BEGIN\b", r.stdout)[1:]
        got = {int(parts[k]): [msgs[int(n)] for n in re.findall(r"\bASSERT_FAILED_(\d+)\b", parts[k + 1])]
               for k in range(0, len(parts), 2)}
        out += [got[j] for j in range(len(batch))]
    return out


def _relevant(file: str, names) -> set:
    """The parameters among ``names`` that a static_assert of ``file`` depends on,
    through the file's #defines (the others cannot change the verdict)."""
    src = kc.source(file)
    defs = {m.group(1): m.group(2) for m in
            re.finditer(r"^[ \t]*#define\s+(\w+)(?:\([^)]*\))?\s*((?:.*\\\n)*.*)$", src, re.M)}
    todo = [tok for m in _ASSERT.finditer(src) for tok in re.findall(r"[A-Za-z_]\w*", m.group("cond"))]
    seen = set()
    while todo:
        t = todo.pop()
        if t in seen:
            continue
        seen.add(t)
        todo += re.findall(r"[A-Za-z_]\w*", defs.get(t, ""))
    return {n for n in names if n in seen}


def _slider_product(spec, names=None) -> list[dict]:
    """Every combination of the slider values of ``names`` (default: all of
    them) over the defaults."""
    names = [n for n in spec.slider_choices if names is None or n in names]
    return [{**spec.defaults, **dict(zip(names, vals))}
            for vals in itertools.product(*(spec.slider_choices[n] for n in names))]


def _accepted(spec, p) -> bool:
    try:
        spec.validate(p, SHAPE[spec.op])
        return True
    except ValueError:
        return False


def _checked_kernels():
    """Entries whose file has static_asserts, one per (file, entry, fixed) variant."""
    seen, out = set(), []
    for key, spec in catalog.KERNELS.items():
        if "static_assert" not in kc.source(spec.file):
            continue
        sig = (spec.file, spec.entry, tuple(sorted(spec.fixed.items())), tuple(spec.slider_choices))
        if sig not in seen:
            seen.add(sig)
            out.append(key)
    return out


KEYS = _checked_kernels()


def _accepted_but_rejected(spec) -> tuple[list, int]:
    """The slider configurations ``spec``'s rules accept that a static_assert of its
    entry rejects, as (params, messages) pairs, and how many were accepted."""
    checker, msgs = _checker_source(spec.file)
    assert msgs, f"{spec.file} has no static_assert the checker could read"
    # The parameters no static_assert depends on cannot change the kernel's verdict:
    # they stay at their defaults, the others run over every slider value.
    rel = _relevant(spec.file, spec.slider_choices)
    configs = _slider_product(spec, rel)
    reps = [p for p in configs if _accepted(spec, p)]
    assert reps, f"{spec.key}: the catalog accepts no slider configuration"
    failed = _failed_asserts(spec.file, spec.entry, [spec.defines(p) for p in reps], checker, msgs)
    return [(p, f) for p, f in zip(reps, failed) if f], len(reps)


@pytest.mark.skipif(CPP is None, reason="cpp (the C preprocessor) not found: it evaluates the static_asserts")
@pytest.mark.parametrize("key", KEYS)
def test_every_accepted_slider_config_passes_the_kernels_static_asserts(key):
    spec = catalog.get(key)
    bad, n = _accepted_but_rejected(spec)
    assert not bad, (f"{key}: the catalog accepts slider configurations that {spec.file} rejects at compile "
                     f"time ({len(bad)} of {n} distinct ones), e.g. {bad[0][0]}: {bad[0][1]}")


@pytest.mark.skipif(CPP is None, reason="cpp (the C preprocessor) not found: it evaluates the static_asserts")
def test_a_rule_broken_on_purpose_is_caught():
    """The check above can fail: warptile_db's rules without its two double-buffer
    rules (BK even; two buffers within 48 KB of static shared memory) accept
    configurations its WT_DB_OK static_assert rejects."""
    spec = catalog.get("warptile_db")
    weakened = dataclasses.replace(spec, rules=catalog.get("warptile").rules)
    bad, _ = _accepted_but_rejected(weakened)
    assert bad and all(any("WT_DB_OK" in m for m in f) for _, f in bad), bad[:3]


NVCC = kc.nvcc_path()


def _nvcc_frontend(file: str, entry: str, defines: dict) -> tuple[bool, str]:
    """Compile ``entry``'s build of ``file`` to PTX without optimisation (the
    front end evaluates every static_assert). Returns (ok, log)."""
    import tempfile
    from pathlib import Path
    with tempfile.TemporaryDirectory() as tmp:
        cu = Path(tmp) / file
        cu.write_text(kc.source(file))
        args = [NVCC, "--ptx", "-arch=sm_90", "-std=c++17", "-Xcicc", "-O0", "-o", str(Path(tmp) / "k.ptx")]
        args += [f"-D{k}={v}" for k, v in sorted(kc.entry_defines(entry, defines).items())]
        r = subprocess.run(args + [str(cu)], capture_output=True, text=True, timeout=300)
    return r.returncode == 0, r.stdout + r.stderr


@pytest.mark.skipif(NVCC is None or CPP is None, reason="nvcc or cpp not found")
@pytest.mark.parametrize("key", ["reg1d", "cp_async", "tile1d_swizzle", "wmma_f16", "mma_sync_f16"])
def test_nvcc_agrees_with_the_preprocessor_check(key):
    """One accepted and one rejected slider configuration per kernel file,
    compiled for real: the accepted one compiles, the rejected one stops at a
    static_assert, which the preprocessor check named too."""
    spec = catalog.get(key)
    checker, msgs = _checker_source(spec.file)
    configs = _slider_product(spec)
    good = next(p for p in configs if _accepted(spec, p))
    verdicts = _failed_asserts(spec.file, spec.entry, [spec.defines(p) for p in configs[:2000]], checker, msgs)
    rejected = [p for p, f in zip(configs, verdicts) if f]
    assert rejected, f"{key}: no slider configuration trips a static_assert (are they live?)"
    bad = rejected[len(rejected) // 2]
    assert not _accepted(spec, bad), f"{key}: the catalog accepts {bad}, which the kernel rejects"
    ok, log = _nvcc_frontend(spec.file, spec.entry, spec.defines(good))
    assert ok, f"{key} {good}: accepted by the catalog but does not compile:\n{log[-3000:]}"
    ok, log = _nvcc_frontend(spec.file, spec.entry, spec.defines(bad))
    assert not ok and "static assertion failed" in log, f"{key} {bad}: expected a static_assert failure:\n{log[-3000:]}"
