"""Write the seminar's quizzes as QTI packages, for Canvas, Moodle and other learning platforms.

The questions are the package's bank (``usaav_edu/quizzes/sessionKK.json``, the quizzes at the
end of the chapters); each session's quiz becomes ``<out>/sessionKK.zip``, a QTI 1.2 package made
by text2qti: an ``imsmanifest.xml`` and one assessment, with every question, its correct answer
(a choice, or a numeric range) and the feedback of each answer.  Canvas imports it under
Settings > Import course content > QTI .zip file; Moodle's question bank imports it with the
IMS QTI format plugin, or through Canvas's Common Cartridge export.

    python tools/quiz_qti.py                   # all sessions, into _build/qti
    python tools/quiz_qti.py --out /tmp/qti 1 2

Each package is written to a temporary file and renamed into place; a target that exists and is
not a regular file is refused.
"""
from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from usaav_edu import quizzes  # noqa: E402

DEFAULT_OUT = ROOT / "_build" / "qti"
#: Markdown (text2qti reads its text as Markdown) characters that must stay literal; ``$`` would
#: start LaTeX, which text2qti renders through the platform's equation images
MARKDOWN_SPECIAL = re.compile(r"([\\`*_$])")


def _text(s: str) -> str:
    """One line of text2qti text: white space collapsed, Markdown specials escaped (the bank's
    HTML tags, such as ``<sub>``, pass through Markdown as they are)."""
    return MARKDOWN_SPECIAL.sub(r"\\\1", " ".join(str(s).split()))


def _number(x) -> str:
    return repr(float(x))


def question_text(number: int, q: dict) -> list[str]:
    """The text2qti lines of the question ``q`` of the bank, numbered ``number``."""
    lines = [f"Title: {q['id']}", f"{number}.  {_text(q['question'])}"]
    if q["type"] == "multiple_choice":
        for letter, a in zip("abcdefghijklmnopqrstuvwxyz", q["answers"], strict=False):
            mark = "*" if a["correct"] else ""
            lines.append(f"{mark}{letter}) {_text(a['answer'])}")
            lines.append(f"... {_text(a['feedback'])}")
    elif q["type"] == "numeric":
        right = [a for a in q["answers"] if a.get("type") == "range" and a.get("correct")]
        wrong = [a for a in q["answers"] if a.get("type") == "default"]
        if len(right) != 1 or len(wrong) != 1:
            raise ValueError(f"question {q['id']}: a numeric question needs one correct range "
                             "and one default answer")
        lo, hi = right[0]["range"]
        lines.append(f"+   {_text(right[0]['feedback'])}")
        lines.append(f"-   {_text(wrong[0]['feedback'])}")
        lines.append(f"=   [{_number(lo)}, {_number(hi)}]")
    else:
        raise ValueError(f"question {q['id']}: type {q['type']!r} is neither multiple_choice "
                         "nor numeric")
    return lines


def quiz_text(session: int) -> str:
    """Session ``session``'s quiz in text2qti's text format."""
    quiz = quizzes.load(session)
    lines = [f"Quiz title: Session {quiz['session']}: {_text(quiz['title'])}",
             f"Quiz description: Check your understanding of chapter {quiz['chapter']} of the "
             "book.", ""]
    for k, q in enumerate(quiz["questions"], start=1):
        lines += question_text(k, q) + [""]
    return "\n".join(lines)


def qti_bytes(session: int) -> bytes:
    """Session ``session``'s quiz as the bytes of a QTI zip package (text2qti)."""
    from text2qti.config import Config
    from text2qti.qti import QTI
    from text2qti.quiz import Quiz

    quiz = Quiz(quiz_text(session), config=Config(), source_name=f"session{session:02d}")
    return QTI(quiz).zip_bytes()


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder and a rename."""
    if path.exists() and (path.is_symlink() or not path.is_file()):
        raise ValueError(f"{path} exists and is not a regular file; refusing to replace it")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write(out: Path, sessions=quizzes.SESSIONS) -> list[Path]:
    """Write ``<out>/sessionKK.zip`` for every session of ``sessions``; return the paths."""
    paths = []
    for s in sessions:
        path = Path(out) / f"session{quizzes._check_session(s):02d}.zip"
        write_atomic(path, qti_bytes(s))
        paths.append(path)
    return paths


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sessions", nargs="*", type=int, metavar="SESSION",
                        help=f"sessions to export ({quizzes.SESSIONS[0]} to "
                             f"{quizzes.SESSIONS[-1]}; default all)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help="folder of the packages (default _build/qti)")
    args = parser.parse_args(argv)
    try:
        paths = write(args.out, args.sessions or quizzes.SESSIONS)
    except (TypeError, ValueError) as e:
        parser.error(str(e))
    for p in paths:
        print(p)
    return 0


if __name__ == "__main__":
    sys.exit(main())
