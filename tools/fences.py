"""Fenced blocks of MyST text: where a block opened by a fence line ends.

A block opened by a fence of ``n`` backticks or colons (```` ``` ````, ``:::``, ``::::`` ...)
ends at the first later line made of that character alone, at least ``n`` times (CommonMark's
rule, which MyST follows for directives too).  The tools that read the book's sources
(``tools/problem_sets.py``, ``tools/editions.py``) find the end of a block here; a block that is
never closed is an error, not a block that silently runs to the end of the text.
"""
from __future__ import annotations


class FenceError(ValueError):
    """A fenced block that is never closed: the message names the text and the line."""


def fence_end(lines: list[str], start: int, fence: str, where: str = "text") -> int:
    """The index of the line closing the block whose fence ``fence`` opens ``lines[start]``.

    ``where`` names the text in the error ("book/ch04_rope.ipynb cell 12"); the line given is
    ``start + 1``, counted in ``lines``.
    """
    if not fence or set(fence) - {fence[0]}:
        raise ValueError(f"fence={fence!r}: expected a run of one character, like '```'")
    char, width = fence[0], len(fence)
    for k in range(start + 1, len(lines)):
        s = lines[k].strip()
        if len(s) >= width and set(s) == {char}:
            return k
    raise FenceError(f"{where}: line {start + 1}: the {fence} block opened by "
                     f"{lines[start].strip()!r} is never closed (expected a line {fence})")
