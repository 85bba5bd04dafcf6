"""Progress lines from inside long tests, so that no stretch of a run is silent for long.

pytest prints one character per finished test, so a test (or a fixture) that works for
minutes looks like a hang. Such steps call :func:`say` for each thing they finish, or wait
through :func:`wait` / :func:`run`, which print a line every :data:`EVERY_S` seconds while
they wait. The lines go to the terminal even while pytest captures the test's output
(tests/conftest.py binds the session with :func:`bind`); without a session (a test module
imported by hand) they go to stderr.
"""
from __future__ import annotations

import subprocess
import sys
import time
from concurrent.futures import FIRST_COMPLETED
from concurrent.futures import wait as _wait_futures

EVERY_S = 15.0          # a heartbeat at least this often while a long step waits
_session = {"config": None, "t0": time.monotonic()}


def bind(config) -> None:
    """Write through this pytest session's terminal (tests/conftest.py calls it)."""
    _session["config"] = config
    _session["t0"] = time.monotonic()


def say(message: str) -> None:
    """One line on the terminal, prefixed with the seconds since the session started."""
    line = f"[+{time.monotonic() - _session['t0']:4.0f}s] {message}"
    config = _session["config"]
    tr = config.pluginmanager.get_plugin("terminalreporter") if config else None
    capman = config.pluginmanager.get_plugin("capturemanager") if config else None
    if tr is None or capman is None:
        print(line, file=sys.stderr, flush=True)
        return
    with capman.global_and_fixture_disabled():
        tr.ensure_newline()
        tr.write(line + "\n", flush=True)


def wait(futures, what: str, messages=None) -> None:
    """Block until every future in ``futures`` is done, saying what finished and, at least
    every :data:`EVERY_S` seconds, that ``what`` is still running. ``messages`` (a
    ``queue.Queue`` of strings, optional) is drained on the way: worker threads put their
    progress there and this, the main thread, prints it."""
    futures = list(futures)
    t0 = last = time.monotonic()
    pending = set(futures)
    while pending:
        done, pending = _wait_futures(pending, timeout=1.0, return_when=FIRST_COMPLETED)
        _drain(messages)
        if time.monotonic() - last >= EVERY_S and pending:
            say(f"{what}: {len(futures) - len(pending)} of {len(futures)} done, "
                f"{time.monotonic() - t0:.0f} s")
            last = time.monotonic()
    _drain(messages)


def _drain(messages) -> None:
    while messages is not None and not messages.empty():
        say(messages.get_nowait())


def run(cmd: list, what: str, **kwargs) -> subprocess.CompletedProcess:
    """``subprocess.run(cmd, capture_output=True, text=True, **kwargs)`` that says, every
    :data:`EVERY_S` seconds, that ``what`` is still running. ``timeout`` (s) is honoured:
    the process is killed and ``subprocess.TimeoutExpired`` raised."""
    timeout = kwargs.pop("timeout", None)
    t0 = time.monotonic()
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs) as p:
        while True:
            try:
                out, err = p.communicate(timeout=EVERY_S)
                break
            except subprocess.TimeoutExpired:
                elapsed = time.monotonic() - t0
                if timeout is not None and elapsed > timeout:
                    p.kill()
                    p.communicate()
                    raise
                say(f"{what}: still running, {elapsed:.0f} s")
    return subprocess.CompletedProcess(cmd, p.returncode, out, err)


def done(what: str, t0: float) -> None:
    """``what`` finished, with the seconds since ``t0`` (a ``time.monotonic()``)."""
    say(f"{what}: done in {time.monotonic() - t0:.0f} s")


__all__ = ["EVERY_S", "bind", "done", "run", "say", "wait"]
