"""The seminar's plan (book/seminar/plan.yml): it loads, it dates the sessions from one start
date, its calendar parses, the pages made from it are current, and every text that states its
numbers (the README, the seminar page, "Before you start", the instructor guide) agrees with it.
"""
import copy
import datetime as dt
import json
import re
import shutil
from pathlib import Path

import icalendar
import pytest
import yaml

from tools import seminar_plan as sp

ROOT = Path(__file__).resolve().parents[1]

WORDS = {"eight": 8, "nine": 9, "ten": 10, "eleven": 11}


@pytest.fixture(scope="module")
def plan():
    return sp.load_plan()


@pytest.fixture(scope="module")
def conf():
    return sp.load_settings()


@pytest.fixture(scope="module")
def exercises():
    return sp.chapter_exercises()


def settings_with(**changes):
    """The book's seminar settings with some keys changed, checked as the tool checks them."""
    raw = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    raw["seminar"].update(changes)
    return sp.settings(raw)


def broken(plan, change):
    """A copy of the plan with ``change`` applied to it."""
    raw = copy.deepcopy(plan)
    change(raw)
    return raw


# ------------------------------------------------------------------------------- the plan


def test_plan_has_ten_sessions_and_an_optional_eleventh(plan):
    numbers = [s["number"] for s in plan["sessions"]]
    assert numbers == list(range(1, 12))
    assert [s["number"] for s in sp.regular(plan)] == list(range(1, 11))
    assert plan["sessions"][-1]["optional"] is True


def test_every_session_has_an_agenda_demo_three_questions_and_homework(plan):
    for s in sp.regular(plan):
        assert s["agenda"][0][0] == 0 and s["agenda"][-1][1] == 90, s["number"]
        assert "ExperimentDashboard" in s["demo"]["code"] or "simulate" in s["demo"]["code"]
        assert len(s["questions"]) >= 3 and s["homework"]["required"] and s["in_class"]


def test_homework_and_in_class_labels_are_chapter_exercises(plan, exercises):
    sp.check_labels(plan, exercises)
    bad = broken(plan, lambda p: p["sessions"][0]["homework"]["required"].append("ch1-ex-nowhere"))
    with pytest.raises(sp.PlanError, match="session 1 homework.required: 'ch1-ex-nowhere'"):
        sp.check_labels(bad, exercises)


def test_exercise_counts_are_those_of_the_chapters(plan, exercises):
    for c in plan["chapters"]:
        path = ROOT / "book" / f"{c['page']}.ipynb"
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        stubs = sum("exercise-stub" in x.get("metadata", {}).get("tags", []) for x in cells)
        found = sum(1 for chapter, _ in exercises.values() if chapter == c["chapter"])
        assert (c["exercises"], c["stubs"]) == (found, stubs), c["page"]


def test_a_gap_in_an_agenda_is_an_error_naming_the_row(plan):
    bad = broken(plan, lambda p: p["sessions"][1]["agenda"][1].__setitem__(0, 12))
    with pytest.raises(sp.PlanError, match=r"sessions\[1\]\.agenda\[1\]: starts at minute 12"):
        sp.validate(bad)


def test_reading_minutes_must_follow_from_words_and_code_cells(plan):
    bad = broken(plan, lambda p: p["chapters"][0].__setitem__("reading_minutes", 17))
    with pytest.raises(sp.PlanError, match=r"chapters\[0\]\.reading_minutes: 2753 words and 16 "
                                           r"code cells make 71 minutes, the plan says 17"):
        sp.validate(bad)


def test_a_session_without_questions_is_an_error(plan):
    bad = broken(plan, lambda p: p["sessions"][4].__setitem__("questions", ["one?"]))
    with pytest.raises(sp.PlanError, match=r"sessions\[4\]\.questions: expected three or more"):
        sp.validate(bad)


# ------------------------------------------------------------------------------- the dates


def test_sessions_are_weekly_from_the_start_date_of_the_config(plan, conf):
    raw = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))["seminar"]
    start = dt.date.fromisoformat(str(raw["start"]))
    dates = [day for _, day in sp.session_dates(plan, conf)]
    assert dates[0] == start
    assert dates == [start + dt.timedelta(weeks=raw["weeks_between"] * k) for k in range(len(dates))]
    assert len(dates) == (11 if raw["talks"] else 10)


def test_a_skipped_date_moves_the_later_sessions(plan):
    conf = settings_with(start="2027-02-15", skip=["2027-03-01"], weeks_between=2)
    dates = [day for _, day in sp.session_dates(plan, conf)]
    assert dates[:3] == [dt.date(2027, 2, 15), dt.date(2027, 3, 15), dt.date(2027, 3, 29)]
    assert dt.date(2027, 3, 1) not in dates


@pytest.mark.parametrize("key, value, message", [
    ("start", "15.02.2027", "seminar.start: expected a date written YYYY-MM-DD"),
    ("time", "2pm", "seminar.time: expected a time written HH:MM"),
    ("time_zone", "Mars/Olympus", "seminar.time_zone: expected an IANA time zone"),
    ("weeks_between", 0, "seminar.weeks_between: expected an integer >= 1"),
    ("grading", {"homework": 50, "talk": 30, "project": 30}, "add up to 110, not 100"),
    ("room", "A 101", "unknown keys \\['room'\\]"),
])
def test_bad_settings_are_named(key, value, message):
    with pytest.raises(sp.PlanError, match=message):
        settings_with(**{key: value})


# ------------------------------------------------------------------------------- the calendar


def events(data: bytes):
    return [c for c in icalendar.Calendar.from_ical(data).walk() if c.name == "VEVENT"]


def test_calendar_has_one_event_per_session_at_its_date_and_time(plan, conf):
    got = events(sp.calendar(plan, conf))
    dated = sp.session_dates(plan, conf)
    assert len(got) == len(dated) == 11
    for event, (s, day) in zip(got, dated, strict=True):
        start, end = event.decoded("dtstart"), event.decoded("dtend")
        assert start.date() == day and start.time() == conf["time"]
        assert start.tzinfo.key == conf["time_zone"].key if hasattr(start.tzinfo, "key") else True
        assert start.utcoffset() == dt.datetime.combine(day, conf["time"], conf["time_zone"]).utcoffset()
        assert end - start == dt.timedelta(minutes=90)
        assert str(event["summary"]) == f"Session {s['number']}: {s['title']}"
        if s["reading"]:
            assert f"Reading: {s['reading']} (about {s['reading_minutes']} minutes)" in str(event["description"])


def test_calendar_without_talks_has_ten_events_in_another_zone(plan):
    conf = settings_with(talks=False, time_zone="America/New_York", time="09:30")
    got = events(sp.calendar(plan, conf))
    assert len(got) == 10
    first = got[0].decoded("dtstart")
    assert first.utcoffset() == dt.timedelta(hours=-5) and first.hour == 9 and first.minute == 30
    assert "TZID:America/New_York" in sp.calendar(plan, conf).decode()


def test_calendar_is_the_same_for_the_same_plan(plan, conf):
    assert sp.calendar(plan, conf) == sp.calendar(plan, conf)


# ------------------------------------------------------------------------------- the pages


def test_generated_pages_are_current():
    assert sp.main(["--check"]) == 0


def test_check_catches_a_stale_page(plan, conf, exercises, tmp_path):
    pages = {}
    for name, path in sp.PAGES.items():
        pages[name] = tmp_path / path.name
        shutil.copy(path, pages[name])
    assert sp.stale_pages(plan, conf, exercises, pages) == {}
    later = settings_with(start="2027-03-01")
    stale = sp.stale_pages(plan, later, exercises, pages)
    assert set(stale) == set(pages.values())
    assert "| 1 | Mon 01 Mar 2027 |" in stale[pages["syllabus"]]


def test_syllabus_states_the_settings_and_links_the_calendar(plan, conf):
    text = (ROOT / "book" / "seminar" / "syllabus.md").read_text(encoding="utf-8")
    for s, day in sp.session_dates(plan, conf):
        assert f"| {day:%a %d %b %Y} |" in text, s["number"]
    assert f"at {conf['time']:%H:%M} ({conf['time_zone'].key})" in text
    assert '<a href="seminar.ics" download>' in text
    for key, weight in conf["grading"].items():
        assert f"{weight} % |" in text, key
    assert "## Policies" in text and "Office hours:" in text


def test_every_card_has_its_agenda_demo_and_questions(plan):
    text = (ROOT / "book" / "seminar" / "cards.md").read_text(encoding="utf-8")
    cards = text.split("```{rst-class} seminar-card")[1:]
    assert len(cards) == len(plan["sessions"])
    for s, card in zip(plan["sessions"], cards, strict=True):
        for a, b, _ in s["agenda"]:
            assert f"| {a} to {b} |" in card, (s["number"], a)
        assert s["demo"]["code"].strip() in card
        for q in s["questions"]:
            assert " ".join(q.split()) in card


def test_cards_start_a_printed_page_each():
    css = (ROOT / "_static" / "print.css").read_text(encoding="utf-8")
    rule = re.search(r"section\.seminar-card\s*\{([^}]*)\}", css)
    assert rule and "break-before: page" in rule.group(1)


def test_refuses_to_write_over_a_folder(tmp_path):
    with pytest.raises(sp.PlanError, match="not a regular file"):
        sp.write_atomic(tmp_path, b"x")


# ------------------------------------------------------------------------------- one set of numbers


def _link_target(pattern: str, cell: str) -> str:
    """The page a table's first cell links to (``table_rows`` picked the row by its link)."""
    found = re.search(pattern, cell)
    assert found, f"no link in the cell {cell!r}"
    return found.group(1)


def table_rows(text: str, first: str) -> list[list[str]]:
    """The cells of the rows of every Markdown table in ``text`` whose first cell matches ``first``."""
    rows = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and re.fullmatch(first, cells[0]):
            rows.append(cells)
    return rows


def section(text: str, heading: str) -> str:
    at = text.index(heading + "\n")
    level = heading.split(" ", 1)[0]
    nxt = text.find("\n" + level + " ", at + len(heading))
    return text[at:] if nxt < 0 else text[at:nxt]


def disagreements(root: Path, plan: dict) -> list[str]:
    """Every number stated in the README, the seminar page, "Before you start" and the guide
    that differs from the plan, as a sentence."""
    out = []
    read = lambda rel: (root / rel).read_text(encoding="utf-8")  # noqa: E731
    n = len(sp.regular(plan))
    chapters = {c["page"]: c for c in plan["chapters"]}
    minutes = [s["reading_minutes"] for s in sp.regular(plan)]

    readme = read("README.md")
    said = re.search(r"plan of (\w+) 90-minute sessions", readme)
    if not said or WORDS.get(said.group(1)) != n:
        out.append(f"README: plan of {said and said.group(1)} sessions, the plan has {n}")
    span = re.search(r"\((\d+) to (\d+) minutes\s+of study\)", readme)
    if not span or (int(span.group(1)), int(span.group(2))) != (min(minutes), max(minutes)):
        out.append(f"README: study times {span and span.groups()}, the plan has {min(minutes)} to {max(minutes)}")

    index = " ".join(read("book/seminar/index.md").split())
    said = re.search(r"a seminar of (\w+) sessions of (\d+) minutes", index)
    if not said or (WORDS.get(said.group(1)), int(said.group(2))) != (n, plan["session_minutes"]):
        out.append(f"seminar page: {said and said.groups()} sessions and minutes")
    total = sum(c["exercises"] for c in plan["chapters"])
    parts = sp.part_counts(plan)
    stated = re.search(r"the (\d+) exercises of the (\w+) chapters \((\d+) in Part I, (\d+) in Part II, "
                       r"(\d+) in Part III\)", index)
    counts = (total, len(plan["chapters"]), parts[1]["exercises"], parts[2]["exercises"], parts[3]["exercises"])
    if not stated or (int(stated.group(1)), WORDS.get(stated.group(2), stated.group(2)),
                      *map(int, stated.groups()[2:])) != counts:
        out.append(f"seminar page: exercises {stated and stated.groups()}, the plan has {counts}")

    times = section(read("book/start.md"), "## Reading times")
    header = table_rows(times, "page")
    column = header[0].index("study for the seminar") if header and "study for the seminar" in header[0] else None
    if column is None:
        out.append("Before you start: no column with the seminar's study times")
    else:
        for cells in table_rows(times, r"(\d+\. )?\{doc\}`[^`]+`"):
            page = _link_target(r"`([^`]+)`", cells[0])
            want = chapters[page]["reading_minutes"] if page in chapters else (
                plan["widgets_page"]["reading_minutes"] if page == plan["widgets_page"]["page"] else None)
            got = cells[column]
            if (want is None and got) or (want is not None and got != f"{want} min"):
                out.append(f"Before you start: {page} studied in {got!r}, the plan says {want}")

    guide = read("book/seminar/instructor_guide.md")
    said = re.search(r"a seminar of (\w+) sessions", guide)
    if not said or WORDS.get(said.group(1)) != n:
        out.append(f"guide: a seminar of {said and said.group(1)} sessions, the plan has {n}")
    headings = [int(k) for k in re.findall(r"^## Session (\d+)", guide, re.M)]
    if headings != [s["number"] for s in plan["sessions"]]:
        out.append(f"guide: sessions {headings}")
    for cells in table_rows(section(guide, "### Reading load"), r"\d+, \{doc\}`[^`]+`"):
        page = _link_target(r"`\.\./([^`]+)`", cells[0])
        c = chapters[page]
        if [int(x) for x in cells[1:4]] != [c["words"], c["code_cells"], c["reading_minutes"]]:
            out.append(f"guide: reading load of {page} {cells[1:4]}")
    loads = {int(r[0]): [int(x) for x in r[1:4]] for r in table_rows(section(guide, "### Reading load"), r"\d+")}
    for s in sp.regular(plan):
        if loads.get(s["number"]) != [s["reading_words"], s["reading_code_cells"], s["reading_minutes"]]:
            out.append(f"guide: reading load of session {s['number']} {loads.get(s['number'])}")
    at_a_glance = section(guide, "## Plan at a glance").split("\n### ")[0]
    glance = [r[0] for r in table_rows(at_a_glance, r"\d+( \(optional\))?")]
    if [int(x.split()[0]) for x in glance] != [s["number"] for s in plan["sessions"]]:
        out.append(f"guide: the plan at a glance lists sessions {glance}")
    reading_guide = [int(r[0]) for r in table_rows(section(guide, "## Reading guide"), r"\d+")]
    if reading_guide != [s["number"] for s in sp.regular(plan)]:
        out.append(f"guide: the reading guide lists sessions {reading_guide}")
    for s in plan["sessions"]:
        part = section(guide, next(h for h in re.findall(r"^## Session .*$", guide, re.M)
                                   if h.startswith(f"## Session {s['number']}")))
        about = re.search(r"\(about (\d+) minutes\)", part)
        if s["reading_minutes"] and (not about or int(about.group(1)) != s["reading_minutes"]):
            out.append(f"guide: session {s['number']} reads {about and about.group(1)} minutes")
        rows = [(int(a), int(b)) for a, b in re.findall(r"^\| (\d+) to (\d+) \|", part, re.M)]
        if rows != [(a, b) for a, b, _ in s["agenda"]]:
            out.append(f"guide: session {s['number']} agenda {rows}")
        homework = re.search(r"\*Homework\.\*(.*?)\n\n", part, re.S)
        labels = re.findall(r"<([a-z0-9-]+)>`", homework.group(1)) if homework else []
        want = s["homework"]["required"] + s["homework"]["optional"]
        if sorted(labels) != sorted(want):
            out.append(f"guide: session {s['number']} homework {labels}")
    return out


def test_readme_seminar_page_before_you_start_and_guide_state_the_plans_numbers(plan):
    assert disagreements(ROOT, plan) == []


def test_agreement_check_sees_a_wrong_number(plan, tmp_path):
    for rel in ("README.md", "book/seminar/index.md", "book/start.md", "book/seminar/instructor_guide.md"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / rel, tmp_path / rel)
    start = tmp_path / "book" / "start.md"
    start.write_text(start.read_text(encoding="utf-8").replace("| 6 min | 71 min |", "| 6 min | 17 min |"),
                     encoding="utf-8")
    assert disagreements(tmp_path, plan) == [
        "Before you start: ch01_particles studied in '17 min', the plan says 71"]


def test_book_build_fills_the_pages_and_writes_the_calendar_from_its_config(tmp_path):
    """The Sphinx handlers, on a book whose config starts the seminar two weeks later."""
    from types import SimpleNamespace

    (tmp_path / "book" / "seminar").mkdir(parents=True)
    shutil.copy(sp.PLAN, tmp_path / "book" / "seminar" / "plan.yml")
    for nb in (ROOT / "book").glob("ch[0-9][0-9]_*.ipynb"):
        (tmp_path / "book" / nb.name).symlink_to(nb)
    raw = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    raw["seminar"]["start"] = "2027-03-01"
    (tmp_path / "_config.yml").write_text(yaml.safe_dump(raw), encoding="utf-8")
    app = SimpleNamespace(srcdir=str(tmp_path), outdir=str(tmp_path / "html"),
                          builder=SimpleNamespace(format="html"))
    source = [(ROOT / "book" / "seminar" / "syllabus.md").read_text(encoding="utf-8")]
    sp._on_source_read(app, "book/seminar/syllabus", source)
    assert "| 1 | Mon 01 Mar 2027 |" in source[0] and "| 1 | Mon 15 Feb 2027 |" not in source[0]
    sp._on_build_finished(app, None)
    got = events((tmp_path / "html" / sp.ICS_PATH).read_bytes())
    assert got[0].decoded("dtstart").date() == dt.date(2027, 3, 1) and len(got) == 11
