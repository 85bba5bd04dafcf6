"""The GPU's clock and power while it is timed: sampled with ``nvidia-smi``, read only.

A Tensor Core kernel on an H200 can run into the board's power limit; then the clock,
not the kernel, sets the pace, and a measurement should say so. :class:`PowerSampler`
samples the SM clock, board power and the software power-cap flag in a background
thread while a block of GPU work runs; :func:`power_note` turns a summary into one
sentence. Used by chapter 7's PROBE ladder and chapter 9's wave control.
"""
from __future__ import annotations

import shutil
import statistics
import subprocess
import threading


class PowerSampler:
    """Sample SM clock and board power with ``nvidia-smi`` in a background
    thread while a block of GPU work runs::

        with PowerSampler() as ps:
            ...timings...
        ps.summary()   # {"samples", "clock_MHz_min", "clock_MHz_median", "power_W_max", ...}

    Reads only (no setting is changed). ``summary()`` is None when
    ``nvidia-smi`` is absent or returned nothing.
    """
    QUERY = "clocks.sm,clocks.max.sm,power.draw,power.limit,clocks_event_reasons.sw_power_cap"

    def __init__(self, period_s: float = 0.05):
        self.period_s = period_s
        self.rows: list = []
        self._stop = threading.Event()
        self._thread = None

    def _poll(self):
        exe = shutil.which("nvidia-smi")
        while exe and not self._stop.is_set():
            try:
                out = subprocess.run([exe, f"--query-gpu={self.QUERY}", "--format=csv,noheader,nounits", "-i", "0"],
                                     capture_output=True, text=True, timeout=5).stdout.strip()
                f = [x.strip() for x in out.splitlines()[0].split(",")]
                self.rows.append((float(f[0]), float(f[1]), float(f[2]), float(f[3]), f[4]))
            except Exception:      # a missing field or a slow call: skip the sample
                pass
            self._stop.wait(self.period_s)

    def __enter__(self):
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(timeout=10)

    def summary(self) -> dict | None:
        if not self.rows:
            return None
        clk = [r[0] for r in self.rows]
        pw = [r[2] for r in self.rows]
        capped = sum(1 for r in self.rows if r[4].lower() == "active")
        return {"samples": len(self.rows), "clock_MHz_min": min(clk), "clock_MHz_median": statistics.median(clk),
                "clock_MHz_max_allowed": self.rows[0][1], "power_W_max": max(pw),
                "power_W_median": statistics.median(pw), "power_limit_W": self.rows[0][3],
                "power_capped_fraction": capped / len(self.rows)}


def power_note(power: dict | None) -> str:
    """One sentence on the clock and power seen during the timings."""
    if not power:
        return "Clock and power were not sampled (nvidia-smi absent)."
    capped = power["power_capped_fraction"]
    return (f"During these timings the SM clock ran between {power['clock_MHz_min']:.0f} and "
            f"{power['clock_MHz_max_allowed']:.0f} MHz (median {power['clock_MHz_median']:.0f}); board power "
            f"peaked at {power['power_W_max']:.0f} W of a {power['power_limit_W']:.0f} W limit, and the "
            f"driver reported the software power cap as active in {capped:.0%} of "
            f"{power['samples']} nvidia-smi samples taken during the timings.")
