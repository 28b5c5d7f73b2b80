"""Predict, then see: a question whose answer the reader picks before the run is revealed.

``Predict(question, choices, answer, explanation)`` shows the question and one button per
choice; picking a choice shows whether it is the answer and, in every case, the explanation
(what the run measured).  The link from the buttons to the reveal is made in the browser
(``jslink``), so it works in the static book without a kernel.
"""
from __future__ import annotations

import html

import ipywidgets as W

from . import _checks


def _reveal(right: bool, picked: str, answer: str, explanation: str) -> str:
    mark = "Yes" if right else "Not quite"
    tail = "" if right else f" The run shows <b>{html.escape(answer)}</b>."
    return (f'<div class="usaav-predict-reveal" role="status"><b>{mark}: you predicted '
            f"{html.escape(picked)}.</b>{tail} {explanation}</div>")


class Predict(W.VBox):
    """A prediction prompt with its reveal.

    ``choices`` are the possible answers (2 to 6 short strings), ``answer`` the one the run
    bears out (it must be one of them), ``explanation`` the HTML sentence shown after any
    pick, usually with the measured value.
    """

    def __init__(self, question: str, choices, answer: str, explanation: str, **kwargs):
        _checks.keywords(type(self), kwargs)
        for name, value in (("question", question), ("answer", answer), ("explanation", explanation)):
            if not isinstance(value, str) or not value.strip():
                raise TypeError(f"{name} must be a non-empty string")
        choices = list(choices)
        if not 2 <= len(choices) <= 6 or not all(isinstance(c, str) and c for c in choices):
            raise ValueError(f"choices must be 2 to 6 non-empty strings, got {_checks.shown(choices)}")
        if len(set(choices)) != len(choices):
            raise ValueError(f"choices must differ, got {_checks.shown(choices)}")
        if answer not in choices:
            raise ValueError(f"answer {answer!r} is not one of the choices {_checks.shown(choices)}")
        self.answer = answer
        self.buttons = W.ToggleButtons(options=choices, value=None, description="",
                                       tooltips=[f"predict: {c}" for c in choices])
        self.buttons.add_class("usaav-predict-choices")
        reveals = [W.HTML(_reveal(c == answer, c, answer, explanation)) for c in choices]
        # button k shows reveal k: the same index on both sides, linked in the browser
        self.reveal = W.Stack(reveals, selected_index=None)
        self._link = W.jslink((self.buttons, "index"), (self.reveal, "selected_index"))
        title = W.HTML(f'<p class="usaav-predict-question"><b>Predict first.</b> {question} '
                       "<i>Pick your prediction to see the run.</i></p>")
        super().__init__([title, self.buttons, self.reveal], **kwargs)
        self.add_class("usaav-predict")
