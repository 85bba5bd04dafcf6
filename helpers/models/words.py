"""How the book writes a count in a sentence: the one plural rule that plan reasons, figure
notes, ncu summaries and the exercises' self-test line share."""
from __future__ import annotations


def counted(n: int, word: str) -> str:
    """``n`` and ``word``, plural unless ``n`` is 1: "1 k-tile", "2 k-tiles", "1 tile"."""
    return f"{n} {word}" + ("" if n == 1 else "s")
