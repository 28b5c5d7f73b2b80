"""Assemble the published site: the book, its student edition, the session decks and the PDFs.

Usage (``make site`` runs the first form after ``make book`` and ``make book-student``)::

    python tools/assemble_site.py                          # -> _build/site
    python tools/assemble_site.py --slides DIR --pdf DIR   # decks / PDFs made already

The site (``_build/site``)::

    index.html, book/, ...  the book, full edition (_build/html)
    student/                the student edition (_build/student/_build/html)
    slides/                 whatever ``tools/slides.py --out slides`` writes: sessionKK.html, lib/
    pdf/                    tools/print_pdf.py: each chapter (ch01_particles.pdf), each problem
                            set's key from the full edition (problems_part1_key.pdf) and its
                            handout from the student edition (problems_part1.pdf), and the
                            seminar's cards and syllabus when the book has those pages
    qti/                    tools/quiz_qti.py: each session's quiz as a QTI package for Canvas
                            or Moodle (session01.zip)

The pages link these parts (tools/book_site.py writes the links in every build); once the site
is put together, every such link (``a.usaav-site-link`` and the header's PDF entry, in both
editions) must resolve to a file of the site, or nothing is published.  The site is assembled in
a temporary folder beside the target and renamed into place only when complete and checked, so
an interrupted or failed run leaves the previous site as it was.  A missing part (no book
build, no student edition, a deck or a PDF a page links that was not made) is an error naming it
and the command that makes it; exit status 1.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

try:  # imported as tools.assemble_site, or run as tools/assemble_site.py (tools/ on the path)
    from tools.book_site import (
        PDF_DIR,
        PROBLEMS_PAGE,
        QTI_DIR,
        SITE_LINK_CLASS,
        SITE_PARTS,
        SLIDES_DIR,
        STUDENT_DIR,
        page_pdf,
    )
except ImportError:  # pragma: no cover
    # the same module, run as a script
    from book_site import (  # type: ignore[no-redef,import-not-found]
        PDF_DIR,
        PROBLEMS_PAGE,
        QTI_DIR,
        SITE_LINK_CLASS,
        SITE_PARTS,
        SLIDES_DIR,
        STUDENT_DIR,
        page_pdf,
    )

ROOT = Path(__file__).resolve().parents[1]

BOOK = ROOT / "_build" / "html"
STUDENT = ROOT / "_build" / "student" / "_build" / "html"
OUT = ROOT / "_build" / "site"
#: folders of a built edition that hold no pages
NOT_PAGES = {"_static", "_sources", "_images", "widgets-js", "mathjax"}
#: printers at once (one chromium each): the machine's cores, at most two
PRINT_WORKERS = min(2, os.cpu_count() or 1)
#: the header's entry for the printed page (tools/book_site.py)
PRINTED_ENTRY_CLASS = "btn-printed-chapters-button"


class SiteError(Exception):
    """A part of the site is missing or a link of it does not resolve."""


def _check_build(path: Path, what: str, how: str) -> Path:
    if not (path / "index.html").is_file():
        raise SiteError(f"{what} is missing: no {path / 'index.html'} ({how})")
    return path


def print_jobs(book: Path, student: Path) -> list[tuple[Path, str]]:
    """What is printed, as ``(built page, PDF name)``: the chapters, the problem sets' keys, the
    cards and syllabus of the full edition, the problem sets' handouts of the student edition
    (names from :func:`book_site.page_pdf`)."""
    jobs = []
    for edition, site in (("full", book), ("student", student)):
        pages = sorted(site.glob("book/ch*.html")) + sorted(site.glob("book/seminar/*.html"))
        for html_path in pages:
            name = html_path.relative_to(site).with_suffix("").as_posix()
            if edition == "student" and not PROBLEMS_PAGE.match(name):
                continue  # the cards and syllabus are the same in both editions: printed once
            target = page_pdf(name, edition)
            if target:
                jobs.append((html_path, target.split("/", 1)[1]))
    return jobs


def print_pdfs(jobs: list[tuple[Path, str]], out: Path, workers: int = PRINT_WORKERS) -> None:
    """Print every job into ``out`` with tools/print_pdf.py, in ``workers`` processes at once
    (each its own chromium; the chapters, which take longest, dealt out in turn); a SiteError
    naming the failed PDFs when one fails (its problems are printed above)."""
    if not jobs:
        raise SiteError("nothing to print: the book has no chapter or problem-set page")
    workers = max(1, min(workers, len(jobs)))
    groups = [jobs[k::workers] for k in range(workers)]
    procs = []
    with tempfile.TemporaryDirectory(prefix="usaav-print-") as tmp:
        for k, group in enumerate(groups):
            spec = Path(tmp) / f"jobs{k}.json"
            spec.write_text(json.dumps([[str(html), str(out / name)] for html, name in group]),
                            encoding="utf-8")
            procs.append(subprocess.Popen([sys.executable, str(ROOT / "tools" / "print_pdf.py"),
                                           "--jobs", str(spec)]))
        codes = [p.wait() for p in procs]
    failed = [name for code, group in zip(codes, groups, strict=True) if code for _, name in group
              if not (out / name).is_file()]
    if any(codes):
        raise SiteError("printing failed (messages above)"
                        + (f"; not printed: {', '.join(failed)}" if failed else ""))


def make_quiz_packages(out: Path) -> None:
    """The quizzes as QTI packages: ``tools/quiz_qti.py --out <out>``."""
    cmd = [sys.executable, str(ROOT / "tools" / "quiz_qti.py"), "--out", str(out)]
    if subprocess.run(cmd, stdout=subprocess.DEVNULL).returncode != 0:
        raise SiteError(f"the quiz packages: {' '.join(cmd)} failed")


def make_decks(out: Path) -> None:
    """The session decks: ``tools/slides.py --out <out>``, as ``make slides`` makes them (from
    the book build in ``_build``: its outputs, numbers and titles)."""
    env = dict(os.environ, USAAV_EDU_STATIC_PAGE="1")
    cmd = [sys.executable, str(ROOT / "tools" / "slides.py"), "--out", str(out)]
    if subprocess.run(cmd, env=env).returncode != 0:
        raise SiteError(f"the decks: {' '.join(cmd)} failed")


class _Links(HTMLParser):
    """The links a page makes into the site's parts: ``a.usaav-site-link`` and the header's
    printed-page entry."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.hrefs: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        classes = (attrs.get("class") or "").split()
        if tag == "a" and attrs.get("href") and (SITE_LINK_CLASS in classes
                                                  or PRINTED_ENTRY_CLASS in classes):
            self.hrefs.append(attrs["href"])


def site_pages(site: Path) -> list[Path]:
    """Every page of the assembled site's two editions (not decks, not static files)."""
    out = []
    for page in sorted(site.rglob("*.html")):
        parts = set(page.relative_to(site).parts)
        if parts & NOT_PAGES or page.relative_to(site).parts[0] == SLIDES_DIR:
            continue
        out.append(page)
    return out


def page_links(page: Path) -> list[str]:
    """The hrefs of the links ``page`` makes into the site's parts (see _Links)."""
    parser = _Links()
    parser.feed(page.read_text(encoding="utf-8", errors="replace"))
    return parser.hrefs


def resolve(page: Path, href: str) -> Path | None:
    """Where a relative ``href`` of ``page`` points on the disk (None for an absolute address)."""
    parts = urlsplit(href)
    if parts.scheme or parts.netloc or href.startswith("/"):
        return None
    return (page.parent / unquote(parts.path)).resolve() if parts.path else page.resolve()


def broken_links(site: Path) -> list[str]:
    """Every link into the site's parts that does not resolve to a file of ``site``."""
    site = site.resolve()
    bad = []
    for page in site_pages(site):
        for href in page_links(page):
            target = resolve(page, href)
            where = page.relative_to(site).as_posix()
            if target is None:
                bad.append(f"{where}: {href} is not a relative link")
            elif site not in target.parents:
                bad.append(f"{where}: {href} points outside the site")
            elif not target.is_file():
                bad.append(f"{where}: {href} -> {target.relative_to(site)} is missing")
    return bad


def _copy_dir(src: Path, dst: Path, what: str, how: str) -> None:
    if not src.is_dir() or not any(src.iterdir()):
        raise SiteError(f"{what} missing: {src} is not a folder with files ({how})")
    shutil.copytree(src, dst, symlinks=False)


def _replace_dir(tmp: Path, out: Path) -> None:
    """Put the finished folder ``tmp`` at ``out`` (two renames; the old site removed after)."""
    if out.is_symlink() or (out.exists() and not out.is_dir()):
        raise SiteError(f"--out {out} exists and is not a folder: refusing to replace it")
    old = None
    if out.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
        os.rename(out, old / out.name)
    os.rename(tmp, out)
    if old is not None:
        shutil.rmtree(old)


def assemble(out: Path = OUT, book: Path = BOOK, student: Path = STUDENT,
             slides: Path | None = None, pdf: Path | None = None) -> Path:
    """Assemble the site into ``out`` (see the module's docstring); return ``out``.

    ``slides`` and ``pdf``, when given, are folders of decks and PDFs made already, copied as
    they are; otherwise tools/slides.py and tools/print_pdf.py make them.
    """
    book = _check_build(Path(book).resolve(), "the book", "make book")
    student = _check_build(Path(student).resolve(), "the student edition", "make book-student")
    out = Path(out).resolve()
    if out in (book, student) or out in book.parents or out in student.parents:
        raise SiteError(f"--out {out} holds a build the site is made from")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    try:
        site = tmp / "site"
        shutil.copytree(book, site, symlinks=False)
        clash = [p for p in SITE_PARTS if (site / p).exists()]
        if clash:
            raise SiteError(f"the book has pages where the site's parts go: {clash}")
        shutil.copytree(student, site / STUDENT_DIR, symlinks=False)
        if slides is not None:
            _copy_dir(Path(slides), site / SLIDES_DIR, "the decks are", "make slides")
        else:
            make_decks(site / SLIDES_DIR)
        make_quiz_packages(site / QTI_DIR)
        if pdf is not None:
            _copy_dir(Path(pdf), site / PDF_DIR, "the PDFs are", "tools/print_pdf.py")
        else:
            (site / PDF_DIR).mkdir()
            print_pdfs(print_jobs(book, student), site / PDF_DIR)
        bad = broken_links(site)
        if bad:
            raise SiteError(f"{len(bad)} links of the site do not resolve:\n  "
                            + "\n  ".join(bad))
        _replace_dir(site, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--book", type=Path, default=BOOK, help="the built book (full edition)")
    ap.add_argument("--student", type=Path, default=STUDENT, help="the built student edition")
    ap.add_argument("--slides", type=Path,
                    help="decks made already (default: tools/slides.py, from the build in _build)")
    ap.add_argument("--pdf", type=Path, help="PDFs printed already (default: tools/print_pdf.py)")
    args = ap.parse_args(argv)
    try:
        out = assemble(args.out, args.book, args.student, args.slides, args.pdf)
    except SiteError as exc:
        print(f"make site: {exc}", file=sys.stderr)
        return 1
    print(f"{out}: the book, {STUDENT_DIR}/, {SLIDES_DIR}/ and {PDF_DIR}/; every link resolves")
    return 0


if __name__ == "__main__":
    sys.exit(main())
