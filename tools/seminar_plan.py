"""The seminar's plan: one file of numbers, and the pages and the calendar made from it.

``book/seminar/plan.yml`` holds the sessions (reading, reading minutes, agenda, demonstration,
questions, homework, the exercise done in class) and the chapters' reading load and exercise
counts.  ``_config.yml`` holds, under ``seminar:``, what belongs to one run of the seminar: the
date of session 1, the time, the time zone, the room, the weeks between sessions, the dates that
are skipped, the grading weights and the office hours.  From the two this module makes

* the session table, the grading table and the contact lines of ``book/seminar/syllabus.md``;
* one card per session in ``book/seminar/cards.md`` (agenda with minutes, demonstration, three
  questions, homework), one printed page each;
* ``seminar.ics``, a calendar with one event per session.

The pages hold the generated text between markers (``<!-- seminar-plan: NAME -->`` and
``<!-- /seminar-plan -->``), so they read well as sources and in a diff:

    python tools/seminar_plan.py            # rewrite the generated parts of the pages
    python tools/seminar_plan.py --check    # change nothing; exit 1 and name the stale pages
    python tools/seminar_plan.py --ics FILE # write the calendar

It is also a Sphinx extension (``local_extensions`` in ``_config.yml``): when the book is built,
the generated parts are made again from the configuration of that build (a new start date needs
no extra step), and the calendar is written to ``book/seminar/seminar.ics`` in the built site,
beside the syllabus that links to it.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import sys
import zoneinfo
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
PLAN = ROOT / "book" / "seminar" / "plan.yml"
CONFIG = ROOT / "_config.yml"
BOOK = ROOT / "book"
PAGES = {"syllabus": ROOT / "book" / "seminar" / "syllabus.md",
         "cards": ROOT / "book" / "seminar" / "cards.md"}
#: where the calendar lands in the built site, relative to its root (beside syllabus.html)
ICS_PATH = "book/seminar/seminar.ics"
BEGIN = re.compile(r"<!-- seminar-plan: ([a-z-]+) -->\n")
END = "<!-- /seminar-plan -->"
SETTINGS_KEYS = {"start", "time", "time_zone", "location", "weeks_between", "skip", "talks",
                 "grading", "instructor", "office_hours"}
GRADING_KEYS = ("homework", "talk", "project")
NUMBER_WORDS = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven",
                8: "eight", 9: "nine", 10: "ten", 11: "eleven", 12: "twelve"}
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


class PlanError(ValueError):
    """The plan or the seminar settings are not what the pages and the calendar need."""


# ----------------------------------------------------------------------------------------------
# the plan


def _need(cond: object, where: str, what: str) -> None:
    """Raise a ``PlanError`` at ``where`` saying ``what`` unless ``cond`` is true (truthy)."""
    if not cond:
        raise PlanError(f"{where}: {what}")


def _int(value, where: str, low: int = 0) -> int:
    _need(isinstance(value, int) and not isinstance(value, bool) and value >= low, where,
          f"expected an integer >= {low}, got {value!r}")
    return value


def _str(value, where: str, empty: bool = False) -> str:
    _need(isinstance(value, str) and (empty or value.strip()), where,
          f"expected {'a' if empty else 'a non-empty'} string, got {value!r}")
    return value


def _labels(value, where: str) -> list[str]:
    _need(isinstance(value, list) and all(isinstance(x, str) and re.fullmatch(r"ch\d+-ex-[a-z0-9-]+", x)
                                          for x in value),
          where, f"expected a list of exercise labels such as ch1-ex-energy, got {value!r}")
    return value


def reading_estimate(words: int, code_cells: int, pace: dict) -> int:
    """Minutes to study a text: its words at the plan's pace, plus a fixed time per code cell."""
    return round(words / pace["words_per_minute"] + code_cells * pace["minutes_per_code_cell"])


def check_load(entry: dict, where: str, pace: dict) -> None:
    """The entry's ``reading_minutes`` is the estimate from its words and code cells."""
    words = _int(entry.get("words", entry.get("reading_words")), f"{where}.words")
    cells = _int(entry.get("code_cells", entry.get("reading_code_cells")), f"{where}.code_cells")
    minutes = _int(entry.get("reading_minutes"), f"{where}.reading_minutes")
    want = reading_estimate(words, cells, pace)
    _need(minutes == want, f"{where}.reading_minutes",
          f"{words} words and {cells} code cells make {want} minutes, the plan says {minutes}")


def check_agenda(rows, where: str, length: int) -> None:
    """Rows ``[start, end, activity]`` that cover 0 to ``length`` minutes without gap or overlap."""
    _need(isinstance(rows, list) and rows, where, "expected a list of [start, end, activity] rows")
    at = 0
    for k, row in enumerate(rows):
        here = f"{where}[{k}]"
        _need(isinstance(row, list) and len(row) == 3, here,
              f"expected [start minute, end minute, activity], got {row!r}")
        start, end, activity = row
        _int(start, f"{here} start")
        _int(end, f"{here} end")
        _str(activity, f"{here} activity")
        _need(start == at, here, f"starts at minute {start}, the row before ends at {at}")
        _need(end > start, here, f"ends at minute {end}, not after its start {start}")
        at = end
    _need(at == length, where, f"ends at minute {at}, a session has {length}")


def check_session(s, k: int, plan: dict) -> None:
    """One session of the plan, numbered ``k``; raises :class:`PlanError` naming the field."""
    where = f"sessions[{k - 1}]"
    _need(isinstance(s, dict), where, f"expected a mapping, got {s!r}")
    _need(s.get("number") == k, f"{where}.number", f"expected {k}, got {s.get('number')!r}")
    optional = s.get("optional", False)
    _need(isinstance(optional, bool), f"{where}.optional", f"expected true or false, got {optional!r}")
    for key in ("title", "theme"):
        _str(s.get(key), f"{where}.{key}")
    chapters = s.get("chapters")
    known = {c["chapter"] for c in plan["chapters"]}
    _need(isinstance(chapters, list) and set(chapters) <= known, f"{where}.chapters",
          f"expected a list of chapter numbers among {sorted(known)}, got {chapters!r}")
    check_agenda(s.get("agenda"), f"{where}.agenda", plan["session_minutes"])
    demo = s.get("demo")
    _need(isinstance(demo, dict), f"{where}.demo", "expected a mapping with summary and code")
    _str(demo.get("summary"), f"{where}.demo.summary")
    _str(demo.get("code"), f"{where}.demo.code", empty=optional)
    homework = s.get("homework")
    _need(isinstance(homework, dict) and set(homework) == {"required", "optional"},
          f"{where}.homework", "expected a mapping with the lists required and optional")
    _labels(homework["required"], f"{where}.homework.required")
    _labels(homework["optional"], f"{where}.homework.optional")
    _labels(s.get("in_class"), f"{where}.in_class")
    questions = s.get("questions")
    _need(isinstance(questions, list) and all(isinstance(q, str) and q.strip() for q in questions),
          f"{where}.questions", f"expected a list of questions, got {questions!r}")
    _str(s.get("quiz"), f"{where}.quiz", empty=optional)
    if not optional:
        _str(s.get("reading"), f"{where}.reading")
        _need(chapters, f"{where}.chapters", "a session with reading names its chapters")
        _need(len(questions) >= 3, f"{where}.questions", f"expected three or more, got {len(questions)}")
        _need(homework["required"], f"{where}.homework.required", "expected at least one exercise")
        _need(s["in_class"], f"{where}.in_class", "expected the exercise done in class")
        check_load(s, where, plan["reading_pace"])


def validate(plan) -> dict:
    """The plan, checked: every error names the field and what was expected."""
    _need(isinstance(plan, dict), "plan", f"expected a mapping, got {type(plan).__name__}")
    for key in ("session_minutes", "reading_pace", "parts", "chapters", "widgets_page", "sessions"):
        _need(key in plan, "plan", f"missing the key {key!r}")
    _int(plan["session_minutes"], "session_minutes", 1)
    pace = plan["reading_pace"]
    _need(isinstance(pace, dict), "reading_pace", "expected words_per_minute and minutes_per_code_cell")
    _int(pace.get("words_per_minute"), "reading_pace.words_per_minute", 1)
    _int(pace.get("minutes_per_code_cell"), "reading_pace.minutes_per_code_cell")
    parts = [p.get("part") for p in plan["parts"]]
    _need(parts == list(range(1, len(parts) + 1)), "parts", f"expected parts 1, 2, ..., got {parts}")
    for k, c in enumerate(plan["chapters"]):
        where = f"chapters[{k}]"
        _need(c.get("chapter") == k + 1, f"{where}.chapter", f"expected {k + 1}, got {c.get('chapter')!r}")
        _str(c.get("page"), f"{where}.page")
        _need(c.get("part") in parts, f"{where}.part", f"expected one of {parts}, got {c.get('part')!r}")
        _int(c.get("exercises"), f"{where}.exercises")
        _int(c.get("stubs"), f"{where}.stubs")
        check_load(c, where, pace)
    check_load(plan["widgets_page"], "widgets_page", pace)
    sessions = plan["sessions"]
    _need(isinstance(sessions, list) and sessions, "sessions", "expected a list of sessions")
    for k, s in enumerate(sessions, start=1):
        check_session(s, k, plan)
    optional = [s["number"] for s in sessions if s.get("optional")]
    _need(all(n > len(sessions) - len(optional) for n in optional), "sessions",
          f"optional sessions come last, got {optional}")
    return plan


def load_plan(path: Path = PLAN) -> dict:
    """The plan in ``path``, validated (:func:`validate`)."""
    try:
        plan = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except yaml.YAMLError as err:
        raise PlanError(f"{path}: not valid YAML: {err}") from None
    return validate(plan)


def regular(plan: dict) -> list[dict]:
    """The sessions that are not optional."""
    return [s for s in plan["sessions"] if not s.get("optional")]


def part_counts(plan: dict) -> dict[int, dict[str, int]]:
    """Per part: its chapters, exercises and "complete the function" stubs."""
    out = {p["part"]: {"chapters": 0, "exercises": 0, "stubs": 0} for p in plan["parts"]}
    for c in plan["chapters"]:
        out[c["part"]]["chapters"] += 1
        out[c["part"]]["exercises"] += c["exercises"]
        out[c["part"]]["stubs"] += c["stubs"]
    return out


# ----------------------------------------------------------------------------------------------
# the seminar's settings in _config.yml


def _date(value, where: str) -> dt.date:
    if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        return value
    if isinstance(value, str):
        try:
            return dt.date.fromisoformat(value)
        except ValueError:
            pass
    raise PlanError(f"{where}: expected a date written YYYY-MM-DD, got {value!r}")


def settings(config: dict) -> dict:
    """The ``seminar:`` settings of a parsed ``_config.yml``, checked and typed."""
    raw = config.get("seminar") if isinstance(config, dict) else None
    if not isinstance(raw, dict):
        raise PlanError("_config.yml seminar: expected a mapping with start, time, time_zone, ...")
    unknown = set(raw) - SETTINGS_KEYS
    _need(not unknown, "_config.yml seminar", f"unknown keys {sorted(unknown)}; "
                                               f"known: {sorted(SETTINGS_KEYS)}")
    out: dict = {"start": _date(raw.get("start"), "seminar.start")}
    time = raw.get("time")
    if not (isinstance(time, str) and re.fullmatch(r"([01]\d|2[0-3]):[0-5]\d", time)):
        raise PlanError(f"seminar.time: expected a time written HH:MM (24 hours), got {time!r}")
    out["time"] = dt.time.fromisoformat(time)
    zone = raw.get("time_zone")
    try:
        out["time_zone"] = zoneinfo.ZoneInfo(_str(zone, "seminar.time_zone"))
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise PlanError(f"seminar.time_zone: expected an IANA time zone such as Europe/Berlin, "
                        f"got {zone!r}") from None
    out["location"] = _str(raw.get("location", ""), "seminar.location", empty=True).strip()
    out["weeks_between"] = _int(raw.get("weeks_between", 1), "seminar.weeks_between", 1)
    skip = raw.get("skip") or []
    _need(isinstance(skip, list), "seminar.skip", f"expected a list of dates, got {skip!r}")
    out["skip"] = {_date(d, f"seminar.skip[{k}]") for k, d in enumerate(skip)}
    talks = raw.get("talks", True)
    _need(isinstance(talks, bool), "seminar.talks", f"expected true or false, got {talks!r}")
    out["talks"] = talks
    grading = raw.get("grading")
    if not (isinstance(grading, dict) and set(grading) == set(GRADING_KEYS)):
        raise PlanError(f"seminar.grading: expected percentages for {', '.join(GRADING_KEYS)}, "
                        f"got {grading!r}")
    for key in GRADING_KEYS:
        _int(grading[key], f"seminar.grading.{key}")
    _need(sum(grading.values()) == 100, "seminar.grading",
          f"the weights add up to {sum(grading.values())}, not 100")
    out["grading"] = {k: grading[k] for k in GRADING_KEYS}
    for key in ("instructor", "office_hours"):
        out[key] = _str(raw.get(key, ""), f"seminar.{key}", empty=True).strip()
    return out


def load_settings(path: Path = CONFIG) -> dict:
    """The ``seminar:`` settings of the book's ``_config.yml``."""
    return settings(yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {})


def scheduled(plan: dict, conf: dict) -> list[dict]:
    """The sessions held in this run of the seminar (the optional talks only if ``talks``)."""
    return [s for s in plan["sessions"] if not s.get("optional") or conf["talks"]]


def session_dates(plan: dict, conf: dict) -> list[tuple[dict, dt.date]]:
    """Each scheduled session with its date: session 1 on ``start``, then every
    ``weeks_between`` weeks, a date in ``skip`` moving that session and all after it on."""
    _need(conf["start"] not in conf["skip"], "seminar.skip", "the start date is skipped")
    out, day = [], conf["start"]
    step = dt.timedelta(weeks=conf["weeks_between"])
    for s in scheduled(plan, conf):
        while day in conf["skip"]:
            day += step
        out.append((s, day))
        day += step
    return out


# ----------------------------------------------------------------------------------------------
# the chapters' exercises (titles for links, counts for the checks)

EXERCISE = re.compile(r"^`{3,}\{exercise\}[ \t]*(.*)\n:label:[ \t]*(\S+)", re.M)


def chapter_exercises(book: Path = BOOK) -> dict[str, tuple[int, str]]:
    """Every exercise of the chapters: label -> (chapter, title)."""
    out = {}
    for path in sorted(book.glob("ch[0-9][0-9]_*.ipynb")):
        chapter = int(path.name[2:4])
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        text = "\n\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
        for title, label in EXERCISE.findall(text):
            out[label] = (chapter, title.strip())
    return out


def check_labels(plan: dict, exercises: dict) -> None:
    """Every homework and in-class label of the plan is an exercise of a chapter."""
    for s in plan["sessions"]:
        for field in ("required", "optional"):
            for label in s["homework"][field]:
                _need(label in exercises, f"session {s['number']} homework.{field}",
                      f"{label!r} is no exercise label of the chapters")
        for label in s["in_class"]:
            _need(label in exercises, f"session {s['number']} in_class",
                  f"{label!r} is no exercise label of the chapters")


# ----------------------------------------------------------------------------------------------
# the generated text


def long_date(day: dt.date) -> str:
    return f"{WEEKDAYS[day.weekday()]} {day.day} {day:%B %Y}"


def linked_reading(session: dict, plan: dict) -> str:
    """The reading with each "chapter N" linked to the chapter's page."""
    pages = {c["chapter"]: c["page"] for c in plan["chapters"]}
    return re.sub(r"\bchapter (\d)\b", lambda m: f"{{doc}}`chapter {m.group(1)} <../{pages[int(m.group(1))]}>`",
                  session["reading"])


def exercise_link(label: str, exercises: dict) -> str:
    return f"{{ref}}`{exercises[label][1]} <{label}>`"


def homework_text(session: dict, exercises: dict) -> str:
    hw = session["homework"]
    text = ", ".join(exercise_link(x, exercises) for x in hw["required"])
    if hw["optional"]:
        text += "; optional: " + ", ".join(exercise_link(x, exercises) for x in hw["optional"])
    return text or "none"


def cell(text: str) -> str:
    """Text for one cell of a Markdown table."""
    return " ".join(text.split()).replace("|", "\\|")


def sessions_table(plan: dict, conf: dict, exercises: dict) -> str:
    lines = ["| session | date | topic | reading | minutes | homework |", "|---|---|---|---|---|---|"]
    for s, day in session_dates(plan, conf):
        number = f"{s['number']} (optional)" if s.get("optional") else str(s["number"])
        reading = linked_reading(s, plan) if s["reading"] else "none"
        minutes = str(s["reading_minutes"]) if s["reading_minutes"] else ""
        lines.append(f"| {number} | {day:%a %d %b %Y} | {cell(s['title'])} | {cell(reading)} | "
                     f"{minutes} | {cell(homework_text(s, exercises))} |")
    return "\n".join(lines)


def schedule_text(plan: dict, conf: dict) -> str:
    """The sentence that says when and where, from the settings."""
    dates = session_dates(plan, conf)
    every = "every week" if conf["weeks_between"] == 1 else f"every {conf['weeks_between']} weeks"
    where = conf["location"] or "a room the instructor announces"
    n = len(regular(plan))
    talks = " and a session of project talks" if conf["talks"] and len(dates) > n else ""
    return (f"{NUMBER_WORDS.get(n, str(n)).capitalize()} sessions of {plan['session_minutes']} minutes{talks}, {every} on "
            f"{WEEKDAYS[conf['start'].weekday()]}s at {conf['time']:%H:%M} ({conf['time_zone'].key}), "
            f"in {where}, from {long_date(dates[0][1])} to {long_date(dates[-1][1])}.")


def grading_table(conf: dict) -> str:
    what = {"homework": "weekly homework (two proofs and one computation)",
            "talk": "one presentation of 20 minutes",
            "project": "a project in pairs, presented in the last session"}
    rows = ["| part | weight |", "|---|---|"]
    rows += [f"| {what[k]} | {v} % |" for k, v in conf["grading"].items()]
    return "\n".join(rows)


def contact_text(conf: dict) -> str:
    missing = "to be filled in by the instructor (`seminar.{}` in `_config.yml`)"
    who = conf["instructor"] or missing.format("instructor")
    hours = conf["office_hours"] or missing.format("office_hours")
    return f"* Instructor: {who}.\n* Office hours: {hours}."


def card(s: dict, day: dt.date | None, plan: dict, exercises: dict) -> str:
    """The card of one session: when, the reading, the agenda, the demonstration, the
    questions, the exercise in class and the homework."""
    title = f"Session {s['number']}{' (optional)' if s.get('optional') else ''}: {s['title']}"
    out = ["```{rst-class} seminar-card", "```", "", f"## {title}", ""]
    when = long_date(day) if day else "not scheduled"
    reading = (f"{linked_reading(s, plan)} (about {s['reading_minutes']} minutes)"
               if s["reading"] else "none")
    out += [f"**{when}**, {plan['session_minutes']} minutes. **Reading:** {reading}.", ""]
    out += ["| minutes | activity |", "|---|---|"]
    out += [f"| {a} to {b} | {cell(text)} |" for a, b, text in s["agenda"]]
    out += ["", f"**Demonstration:** {s['demo']['summary']}.", ""]
    if s["demo"]["code"]:
        out += ["```python", s["demo"]["code"].rstrip("\n"), "```", ""]
    if s["questions"]:
        out += ["**Questions.**", ""]
        out += [f"{k}. {' '.join(q.split())}" for k, q in enumerate(s["questions"], start=1)]
        out += [""]
    if s["in_class"]:
        out += ["**In class:** " + ", ".join(exercise_link(x, exercises) for x in s["in_class"]) + ".", ""]
    if s["homework"]["required"]:
        out += [f"**Homework:** {homework_text(s, exercises)}.", ""]
    return "\n".join(out).rstrip("\n")


def cards_text(plan: dict, conf: dict, exercises: dict) -> str:
    dates = {s["number"]: day for s, day in session_dates(plan, conf)}
    return "\n\n".join(card(s, dates.get(s["number"]), plan, exercises) for s in plan["sessions"])


def regions(plan: dict, conf: dict, exercises: dict) -> dict[str, str]:
    """The generated text of every marked region, by name."""
    return {"schedule": schedule_text(plan, conf),
            "sessions": sessions_table(plan, conf, exercises),
            "grading": grading_table(conf),
            "contact": contact_text(conf),
            "cards": cards_text(plan, conf, exercises)}


def fill(text: str, generated: dict[str, str], where: str = "page") -> str:
    """``text`` with every marked region replaced by its generated text."""
    out, at = [], 0
    for m in BEGIN.finditer(text):
        name = m.group(1)
        _need(name in generated, where, f"unknown region {name!r}; known: {sorted(generated)}")
        end = text.find(END, m.end())
        _need(end >= 0, where, f"region {name!r} has no closing {END}")
        out += [text[at:m.end()], generated[name], "\n"]
        at = end
    out.append(text[at:])
    return "".join(out)


# ----------------------------------------------------------------------------------------------
# the calendar


def calendar(plan: dict, conf: dict, url: str = "") -> bytes:
    """An iCalendar file with one event per scheduled session, in the seminar's time zone."""
    import icalendar

    cal = icalendar.Calendar()
    cal.add("prodid", "-//usaav-edu//seminar plan//EN")
    cal.add("version", "2.0")
    cal.add("x-wr-calname", "Seminar: collapse and its cure")
    stamp = dt.datetime.combine(conf["start"], dt.time(0, 0), tzinfo=dt.UTC)
    for s, day in session_dates(plan, conf):
        start = dt.datetime.combine(day, conf["time"], tzinfo=conf["time_zone"])
        event = icalendar.Event()
        event.add("uid", f"usaav-edu-seminar-{conf['start']:%Y%m%d}-session{s['number']:02d}")
        event.add("dtstamp", stamp)
        event.add("dtstart", start)
        event.add("dtend", start + dt.timedelta(minutes=plan["session_minutes"]))
        event.add("summary", f"Session {s['number']}: {s['title']}")
        reading = (f"Reading: {s['reading']} (about {s['reading_minutes']} minutes)."
                   if s["reading"] else "No reading.")
        event.add("description", f"{reading} {s['theme'][0].upper()}{s['theme'][1:]}."
                  + (f"\n{url}" if url else ""))
        if conf["location"]:
            event.add("location", conf["location"])
        cal.add_component(event)
    cal.add_missing_timezones()
    return cal.to_ical()


# ----------------------------------------------------------------------------------------------
# files


def write_atomic(path: Path, data: bytes) -> None:
    """Write through a temporary file and a rename; refuse a target that is not a regular file."""
    path = Path(path)
    if path.exists() and not path.is_file():
        raise PlanError(f"{path}: not a regular file; refusing to write it")
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def stale_pages(plan: dict, conf: dict, exercises: dict, pages: dict = PAGES) -> dict[Path, str]:
    """Pages whose generated regions differ from what the plan makes: path -> new text."""
    generated = regions(plan, conf, exercises)
    out = {}
    for path in pages.values():
        old = Path(path).read_text(encoding="utf-8")
        new = fill(old, generated, str(path))
        if new != old:
            out[Path(path)] = new
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="change nothing; exit 1 if a page is stale")
    ap.add_argument("--plan", type=Path, default=PLAN)
    ap.add_argument("--config", type=Path, default=CONFIG)
    ap.add_argument("--ics", type=Path, help="also write the calendar to this file")
    args = ap.parse_args(argv)
    try:
        plan, conf = load_plan(args.plan), load_settings(args.config)
        exercises = chapter_exercises()
        check_labels(plan, exercises)
        stale = stale_pages(plan, conf, exercises)
    except PlanError as err:
        print(f"seminar_plan: {err}", file=sys.stderr)
        return 2
    if args.check:
        for path in stale:
            print(f"{path.relative_to(ROOT)}: stale; run python tools/seminar_plan.py")
        return 1 if stale else 0
    for path, text in stale.items():
        write_atomic(path, text.encode("utf-8"))
        print(f"rewrote {path.relative_to(ROOT)}")
    if args.ics:
        write_atomic(args.ics, calendar(plan, conf))
        print(f"wrote {args.ics}")
    return 0


# ----------------------------------------------------------------------------------------------
# the Sphinx extension


def _book_inputs(app) -> tuple[dict, dict, dict]:
    root = Path(app.srcdir)
    plan = load_plan(root / "book" / "seminar" / "plan.yml")
    conf = load_settings(root / "_config.yml")
    return plan, conf, chapter_exercises(root / "book")


def _on_source_read(app, docname, source):
    if docname not in ("book/seminar/syllabus", "book/seminar/cards"):
        return
    plan, conf, exercises = _book_inputs(app)
    source[0] = fill(source[0], regions(plan, conf, exercises), docname)


def _on_build_finished(app, exception):
    # a book without a seminar plan (a test book, a book of other pages) gets no calendar
    if (exception is not None or app.builder.format != "html"
            or not (Path(app.srcdir) / "book" / "seminar" / "plan.yml").is_file()):
        return
    plan, conf, _ = _book_inputs(app)
    target = Path(app.outdir) / ICS_PATH
    target.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(target, calendar(plan, conf))


def setup(app):
    app.connect("source-read", _on_source_read)
    app.connect("build-finished", _on_build_finished)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


if __name__ == "__main__":
    sys.exit(main())
