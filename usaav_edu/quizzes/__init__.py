"""The seminar's quizzes: one short, auto-checked quiz per session, shown at the end of its chapter.

Session ``k`` reads chapter ``k`` and its quiz is ``sessionKK.json`` in this package: a few
multiple-choice and numeric questions on the chapter's ideas, each answer with feedback that says
why it is right or wrong.  The file holds ``session``, ``chapter``, ``title`` and ``questions``, a
list in jupyterquiz's question format (``type`` ``multiple_choice`` with ``answers`` of
``answer``, ``correct``, ``feedback``; ``type`` ``numeric`` with a correct ``range`` answer and a
``default`` one for everything else), each question with an ``id`` of its own.

:func:`show` gives a session's quiz, which the notebook displays as the cell's value, with
jupyterquiz's questions, in JupyterLab and in the built book alike: the questions, the script and
the styles are all in one HTML output of the cell, so a static page runs the quiz in the browser
without a kernel and without the network.  Three changes are made to jupyterquiz's script
(pinned version, checked when the quiz is built): every question's container gets the class
``usaav-quiz`` besides jupyterquiz's own ``Quiz``; the fallback that would fetch MathJax from a
CDN is removed; and the script runs with a ``MathJax`` of its own that is undefined, so that it
never typesets, replaces or loads the page's (the questions write their mathematics in Unicode
and HTML, and hold no TeX).  ``tools/quiz_qti.py`` exports the same questions as QTI for Canvas
and Moodle.  Showing a quiz needs jupyterquiz (``pip install "usaav-edu[widgets]"``); the
questions load without it.

    import usaav_edu as ue
    ue.quizzes.show(3)       # the quiz of session 3, on chapter 3, as the cell's value
    ue.quizzes.Quiz(3)       # the same (the chapters' last cell)
"""
from __future__ import annotations

import itertools
import json
import re
from importlib import resources

from .._validate import require_extra

#: the sessions that have a quiz (session k reads chapter k)
SESSIONS = tuple(range(1, 11))
#: the class of every question's container
QUESTION_CLASS = "usaav-quiz"

#: where jupyterquiz's script sets a question container's class (jupyterquiz 2.9.6.4)
_WRAPPER_CLASS = "this.wrapper.className = 'Quiz';"
#: jupyterquiz's fallback that loads MathJax 3 from a CDN when the page's MathJax has no typeset
_CDN_FALLBACK = re.compile(
    r"console\.log\('WARNING: Trying to force load MathJax 3'\);.*?"
    r"document\.head\.appendChild\(script\);\s*\}\)\(\);", re.S)
#: any network address in the output
ADDRESS = re.compile(r"https?://|//cdn|\bcdn\.", re.I)
_counter = itertools.count(1)
#: the quiz's colours, jupyterquiz's CSS variables; the book's dark blue for the questions,
#: light buttons, green and red for right and wrong
COLOURS = {
    "--jq-multiple-choice-bg": "#1f3b63",
    "--jq-mc-button-bg": "#fafafa",
    "--jq-mc-button-border": "#d0d0d0",
    "--jq-mc-button-inset-shadow": "#555555",
    "--jq-many-choice-bg": "#7a3b12",
    "--jq-numeric-bg": "#1f3b63",
    "--jq-numeric-input-bg": "#e8e8e8",
    "--jq-numeric-input-label": "#101010",
    "--jq-numeric-input-shadow": "#999999",
    "--jq-string-bg": "#1f3b63",
    "--jq-incorrect-color": "#b00020",
    "--jq-correct-color": "#00702a",
    "--jq-text-color": "#fafafa",
    "--jq-link-color": "#bcd4ff",
}


def _check_session(session) -> int:
    """``session`` if it is a session with a quiz (an int from 1 to 10); TypeError or
    ValueError, naming the argument, otherwise."""
    if isinstance(session, bool) or not isinstance(session, int):
        raise TypeError(f"session must be an integer from {SESSIONS[0]} to {SESSIONS[-1]} "
                        f"(the session paired with chapter k), got {session!r}")
    if session not in SESSIONS:
        raise ValueError(f"session must be an integer from {SESSIONS[0]} to {SESSIONS[-1]} "
                         f"(the session paired with chapter k), got {session}")
    return session


def load(session: int) -> dict:
    """Session ``session``'s quiz as stored: ``session``, ``chapter``, ``title``, ``questions``."""
    session = _check_session(session)
    text = resources.files(__name__).joinpath(f"session{session:02d}.json").read_text("utf-8")
    return json.loads(text)


def questions(session: int) -> list[dict]:
    """The questions of session ``session``'s quiz, in jupyterquiz's format."""
    return load(session)["questions"]


def _script(questions_: list[dict], div_id: str) -> str:
    """jupyterquiz's script for ``questions_`` in the container ``div_id``, with the question
    class added and the CDN fallback removed; an unexpected jupyterquiz version is an error."""
    require_extra("widgets", "jupyterquiz", what="usaav_edu.quizzes")
    import jupyterquiz
    from jupyterquiz.dynamic.loader import load_questions_script
    from jupyterquiz.dynamic.renderer import build_script

    prefix, static, url = load_questions_script(questions_, div_id)
    script = build_script(prefix, static, url, div_id, True)
    if script.count(_WRAPPER_CLASS) != 1:
        raise RuntimeError(f"jupyterquiz {jupyterquiz.__version__}: its script no longer sets "
                           f"{_WRAPPER_CLASS!r} once; the quizzes need jupyterquiz 2.9.6.4")
    script = script.replace(_WRAPPER_CLASS,
                            f"this.wrapper.className = 'Quiz {QUESTION_CLASS}';")
    script, removed = _CDN_FALLBACK.subn("/* no MathJax from a CDN */", script)
    if not removed or ADDRESS.search(script):
        raise RuntimeError(f"jupyterquiz {jupyterquiz.__version__}: its script loads something "
                           "from the network in a way the quizzes do not know how to remove; "
                           "the quizzes need jupyterquiz 2.9.6.4")
    return script


def render(session: int) -> str:
    """Session ``session``'s quiz as one HTML fragment: the container, its styles and the script
    that fills it.  Each call gets a container id of its own (``usaavQuizKKnN``)."""
    require_extra("widgets", "jupyterquiz", what="usaav_edu.quizzes")
    from jupyterquiz.dynamic.renderer import build_styles, render_div

    session = _check_session(session)
    div_id = f"usaavQuiz{session:02d}n{next(_counter)}"
    div = render_div(div_id, False, True, False, 1_000_000, 600, 10, "left")
    # the questions hold no TeX (the bank's test checks it), so jupyterquiz's script runs with
    # a MathJax of its own that is undefined: it never calls, replaces or loads the page's
    script = ("(function () {\nvar MathJax;\n" + _script(questions(session), div_id)
              + "\n})();").replace("</", "<\\/")
    return (div + "</div>" + build_styles(div_id, COLOURS)
            + f'<script type="text/javascript">{script}</script>')


class Quiz:
    """A session's quiz as a notebook shows it (its HTML, with the script that runs it)."""

    def __init__(self, session: int):
        self.session = _check_session(session)
        self.questions = questions(self.session)   # a bank that cannot be read fails here

    def _repr_html_(self) -> str:
        return render(self.session)

    def __repr__(self) -> str:
        return f"<quiz of session {self.session}: {len(self.questions)} questions>"


def show(session: int) -> Quiz:
    """Session ``session``'s quiz (1 to 10, on chapter ``session``), shown by the notebook as the
    value of the cell: ``ue.quizzes.show(3)`` as a cell's last line.

    Click an answer, or type a number and press Enter: the feedback says whether it is right and
    why.  It runs in JupyterLab (once the cell has run) and in the static book, without a kernel
    and without the network."""
    return Quiz(session)
