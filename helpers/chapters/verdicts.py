"""Words for a measured change, computed from the record so that a re-recording cannot leave a
typed verdict ("a gain", "within the noise") beside numbers that say otherwise. One rule for every
chapter: a change ``d`` is within ``bound`` when ``|d| <= bound``, else a gain or a loss."""
from __future__ import annotations

STEP_NOISE = 0.03      # a ratio moving this little is within the spread between runs ("a few hundredths")


def change_kind(d: float, bound: float = STEP_NOISE) -> str:
    """"gain", "loss" or "within" for a change ``d`` (a difference of ratios, or a relative change)
    against ``bound`` (same unit; default :data:`STEP_NOISE`)."""
    return "within" if abs(d) <= bound else "gain" if d > 0 else "loss"
