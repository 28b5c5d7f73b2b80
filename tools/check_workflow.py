"""Lint the GitHub Actions workflows, offline.

``python tools/check_workflow.py [--self-check] FILE...``

Each file is checked in two ways.

1. **Against the workflow schema**, by check-jsonschema (the pinned package validates as
   ``check-jsonschema --builtin-schema vendor.github-workflows FILE`` does, with GitHub's
   workflow syntax as a JSON schema shipped inside it, so nothing is downloaded): unknown or
   misspelt keys, missing ``runs-on``, wrong types.
2. **For what a schema cannot see:**

   * every action is pinned to a release (``owner/repo@v4``, ``@v4.1.0``) or a commit;
   * ``needs`` names jobs of the workflow;
   * every ``${{ ... }}`` expression is closed, uses known contexts, and its ``steps.<id>`` and
     ``needs.<job>`` name a step of the job (an earlier one, inside a step) or a needed job;
   * every ``make <target>`` in a ``run`` script is a target of the Makefile;
   * a workflow that publishes with ``actions/deploy-pages`` does it from a job that may write
     Pages (``pages: write``, ``id-token: write``), deploys to the ``github-pages`` environment
     and needs the job that uploads ``_build/site`` (what ``make site`` assembles: the book, its
     student edition, the decks and the PDFs) with ``actions/upload-pages-artifact``; that job
     sets up a Python that ``pyproject.toml`` accepts, builds with ``make site``, and passes the
     address from ``actions/configure-pages`` (its ``base_url`` output) to the build in the
     variable that ``tools/book_site.py`` reads.

``--self-check`` also breaks each file on purpose in several ways (a misspelt key, a missing
permission, an unknown step, ...) and fails unless every broken copy is rejected.

Exit status: 0 when every file passes, 1 otherwise (each problem is printed on one line).
"""
from __future__ import annotations

import argparse
import functools
import re
import sys
from pathlib import Path

import yaml
from packaging.specifiers import SpecifierSet

try:  # imported as tools.check_workflow, or run as tools/check_workflow.py (tools/ on the path)
    from tools.book_site import BASEURL_ENV
except ImportError:  # pragma: no cover
    from book_site import BASEURL_ENV  # type: ignore[no-redef,import-not-found]  # run as a script

ROOT = Path(__file__).resolve().parents[1]

#: check-jsonschema's copy of GitHub's workflow schema (``--builtin-schema``)
SCHEMA = "vendor.github-workflows"
SITE = "_build/site"
#: the make target that builds SITE
BUILD = "site"
CONTEXTS = {"github", "env", "vars", "job", "jobs", "steps", "runner", "secrets", "strategy",
            "matrix", "needs", "inputs"}
FUNCTIONS = {"contains", "startsWith", "endsWith", "format", "join", "toJSON", "fromJSON",
             "hashFiles", "success", "always", "cancelled", "failure", "case"}
PINNED = re.compile(r"^[\w.-]+/[\w.-]+(/[\w./-]+)?@(v\d+(\.\d+){0,2}|[0-9a-f]{40})$")
EXPRESSION = re.compile(r"\$\{\{(.*?)\}\}", re.S)
#: a name read from a context: ``steps.build.outputs.x`` -> ("steps", "build")
REFERENCE = re.compile(r"(?<![\w.'\"-])([A-Za-z_][\w-]*)(?:\.([A-Za-z_][\w-]*))?")


@functools.cache
def workflow_validator():
    """A validator of GitHub's workflow schema: check-jsonschema's ``vendor.github-workflows``,
    built as ``check-jsonschema --builtin-schema vendor.github-workflows`` builds it (its formats
    and its ECMAScript regular expressions).  The schema ships inside the pinned package: nothing
    is downloaded."""
    from check_jsonschema.formats import FormatOptions
    from check_jsonschema.regex_variants import RegexImplementation, RegexVariantName
    from check_jsonschema.schema_loader import BuiltinSchemaLoader

    regex = RegexImplementation(RegexVariantName.default)
    return BuiltinSchemaLoader(SCHEMA).get_validator(
        "workflow", {}, FormatOptions(regex_impl=regex), regex, False)


def load(text: str) -> dict:
    """The workflow as data; YAML 1.1 reads the key ``on`` as true, which is put back."""
    data = yaml.safe_load(text)
    if not isinstance(data, dict):
        raise ValueError("a workflow must be a mapping")
    return {("on" if key is True else key): value for key, value in data.items()}


def schema_errors(data: dict) -> list[str]:
    """The schema's complaints about ``data``, one a line, each at the cause check-jsonschema
    reports as its best deep match (the alternative that got furthest into the data)."""
    from check_jsonschema.reporter import find_best_deep_match

    out = []
    errors = workflow_validator().iter_errors(data)
    for error in sorted(errors, key=lambda e: list(map(str, e.path))):
        best = find_best_deep_match(error) if error.context else error
        where = "/".join(map(str, best.absolute_path)) or "(top)"
        out.append(f"schema: {where}: {best.message[:200]}")
    return out


def make_targets(makefile: Path) -> set[str]:
    targets: set[str] = set()
    for line in makefile.read_text(encoding="utf-8").splitlines():
        m = re.match(r"^([\w.-]+(?:\s+[\w.-]+)*)\s*:(?!=)", line)
        if m and not line.startswith("\t"):
            targets.update(m.group(1).split())
    return targets


def expressions(value) -> list[str]:
    """Every ``${{ ... }}`` body in ``value`` (strings, lists and mappings, recursively)."""
    if isinstance(value, str):
        return EXPRESSION.findall(value)
    if isinstance(value, dict):
        return [e for v in value.values() for e in expressions(v)]
    if isinstance(value, list):
        return [e for v in value for e in expressions(v)]
    return []


def unclosed(value) -> bool:
    if isinstance(value, str):
        return value.count("${{") != len(EXPRESSION.findall(value))
    if isinstance(value, dict):
        return any(unclosed(v) for v in value.values())
    if isinstance(value, list):
        return any(unclosed(v) for v in value)
    return False


def expression_errors(where: str, value, step_ids: set[str], needs: set[str]) -> list[str]:
    out = []
    if unclosed(value):
        out.append(f"{where}: an expression '${{{{' is not closed")
    for body in expressions(value):
        stripped = re.sub(r"'(?:[^']|'')*'", "''", body)  # string literals are not references
        for m in REFERENCE.finditer(stripped):
            name, member = m.group(1), m.group(2)
            if stripped[m.end():].lstrip().startswith("("):
                if name not in FUNCTIONS:
                    out.append(f"{where}: unknown function {name}() in ${{{{{body}}}}}")
                continue
            if name in {"true", "false", "null"}:
                continue
            if name not in CONTEXTS:
                out.append(f"{where}: unknown context {name!r} in ${{{{{body}}}}}")
            elif name == "steps" and member not in step_ids:
                out.append(f"{where}: no step with id {member!r} before it in this job")
            elif name == "needs" and member not in needs:
                out.append(f"{where}: job {member!r} is not in this job's needs")
    return out


def as_list(value) -> list:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def action(step: dict) -> str:
    """The action a step uses, without its version ('' for a run step)."""
    return str(step.get("uses", "")).split("@")[0]


def permissions(workflow: dict, job: dict) -> dict:
    """The permissions a job's token has (the job's own, else the workflow's)."""
    perms = job.get("permissions", workflow.get("permissions"))
    if perms == "write-all":
        return {"pages": "write", "id-token": "write", "contents": "write"}
    return perms if isinstance(perms, dict) else {}


def python_errors(where: str, version, pyproject: Path) -> list[str]:
    m = re.search(r'^requires-python\s*=\s*"([^"]+)"', pyproject.read_text(encoding="utf-8"), re.M)
    if m is None:
        return []
    if version is None or str(version) not in SpecifierSet(m.group(1)):
        return [f"{where}: python-version {version!r} is not one pyproject.toml accepts "
                f"({m.group(1)})"]
    return []


def pages_errors(workflow: dict, jobs: dict, root: Path) -> list[str]:
    """The publishing chain: configure-pages -> make site -> upload -> deploy-pages."""
    deployers = [name for name, job in jobs.items()
                 if any(action(s) == "actions/deploy-pages" for s in job.get("steps") or [])]
    if not deployers:
        return []
    out = []
    uploaders = {name for name, job in jobs.items()
                 if any(action(s) == "actions/upload-pages-artifact"
                        for s in job.get("steps") or [])}
    if not uploaders:
        out.append("no job uploads the site with actions/upload-pages-artifact")
    for name in deployers:
        job = jobs[name]
        perms = permissions(workflow, job)
        for key in ("pages", "id-token"):
            if perms.get(key) != "write":
                out.append(f"jobs/{name}: deploy-pages needs the permission '{key}: write'")
        env = job.get("environment")
        env_name = env.get("name") if isinstance(env, dict) else env
        if env_name != "github-pages":
            out.append(f"jobs/{name}: deploy-pages must run in the 'github-pages' environment")
        if uploaders and not uploaders & set(as_list(job.get("needs"))):
            out.append(f"jobs/{name}: must need the job that uploads the site "
                       f"({', '.join(sorted(uploaders))})")
    for name in sorted(uploaders):
        steps = jobs[name].get("steps") or []
        where = f"jobs/{name}"
        index = {id(s): i for i, s in enumerate(steps)}
        upload = next(s for s in steps if action(s) == "actions/upload-pages-artifact")
        path = str((upload.get("with") or {}).get("path", "")).strip().rstrip("/")
        if path.removeprefix("./") != SITE:
            out.append(f"{where}: upload-pages-artifact must upload {SITE}, not {path!r}")
        pythons = [s for s in steps if action(s) == "actions/setup-python"]
        if not pythons:
            out.append(f"{where}: no actions/setup-python step")
        for s in pythons:
            out += python_errors(where, (s.get("with") or {}).get("python-version"),
                                 root / "pyproject.toml")
        builds = [s for s in steps
                  if re.search(rf"(^|\s)make\s+{BUILD}(\s|$)", str(s.get("run", "")))]
        if not builds:
            out.append(f"{where}: no step runs `make {BUILD}`")
            continue
        build = builds[0]
        if index[id(build)] > index[id(upload)]:
            out.append(f"{where}: the site is uploaded before `make {BUILD}` builds it")
        configure = [s for s in steps[:index[id(build)]]
                     if action(s) == "actions/configure-pages"]
        if not configure or not configure[0].get("id"):
            out.append(f"{where}: `make {BUILD}` must follow an actions/configure-pages step "
                       f"with an id")
            continue
        wanted = f"steps.{configure[0]['id']}.outputs.base_url"
        given = str((build.get("env") or {}).get(BASEURL_ENV, ""))
        if re.fullmatch(r"\$\{\{\s*" + re.escape(wanted) + r"\s*\}\}", given.strip()) is None:
            out.append(f"{where}: `make {BUILD}` must get {BASEURL_ENV}: ${{{{ {wanted} }}}} "
                       f"(got {given!r})")
    return out


def lint_text(text: str, root: Path = ROOT) -> list[str]:
    """Every problem found in the workflow ``text`` (empty when it passes)."""
    try:
        workflow = load(text)
    except (yaml.YAMLError, ValueError) as exc:
        return [f"not a workflow: {exc}"]
    out = schema_errors(workflow)
    jobs = workflow.get("jobs")
    if not isinstance(jobs, dict):
        return out or ["no jobs"]
    targets = make_targets(root / "Makefile")
    for name, job in jobs.items():
        if not isinstance(job, dict):
            continue
        where = f"jobs/{name}"
        needs = {str(n) for n in as_list(job.get("needs"))}
        for n in sorted(needs - set(jobs)):
            out.append(f"{where}: needs {n!r}, which is not a job of this workflow")
        steps = [s for s in job.get("steps") or [] if isinstance(s, dict)]
        all_ids = {str(s["id"]) for s in steps if "id" in s}
        for key in ("environment", "outputs"):
            out += expression_errors(f"{where}/{key}", job.get(key), all_ids, needs)
        for key in ("if", "env", "runs-on", "strategy"):
            out += expression_errors(f"{where}/{key}", job.get(key), set(), needs)
        earlier: set[str] = set()
        for i, step in enumerate(steps):
            at = f"{where}/steps/{i} ({step.get('name') or step.get('uses') or step.get('run')})"
            uses = step.get("uses")
            if uses is not None and not str(uses).startswith(("./", "docker://")):
                if not PINNED.match(str(uses)):
                    out.append(f"{at}: action {uses!r} is not pinned to a release or a commit")
            for target in re.findall(r"(?:^|[;&|(\s])make\s+([\w.-]+)", str(step.get("run", ""))):
                if target not in targets:
                    out.append(f"{at}: `make {target}`: no such target in the Makefile")
            out += expression_errors(at, {k: v for k, v in step.items() if k != "id"},
                                     earlier, needs)
            if "id" in step:
                earlier.add(str(step["id"]))
    out += pages_errors(workflow, jobs, root)
    return out


#: ways of breaking a workflow that the lint must catch: (what, text to find, replacement)
BREAKAGES = [
    ("a misspelt key", "runs-on:", "run-on:"),
    ("a missing permission", "      pages: write\n", ""),
    ("a permission the schema refuses", "id-token: write", "id-token: read"),
    ("an unknown step", "steps.pages.outputs", "steps.page.outputs"),
    ("an unclosed expression", "base_url }}", "base_url }"),
    ("an unknown make target", "run: make site", "run: make sit"),
    ("no step that builds the site", "        run: make site\n", ""),
    ("an unpinned action", "actions/deploy-pages@v5", "actions/deploy-pages@main"),
    ("the wrong site folder", "path: _build/site", "path: _build/html"),
    ("an unknown job", "needs: build", "needs: buld"),
    ("a Python the package refuses", 'python-version: "3.11"', 'python-version: "3.10"'),
    ("no base URL", f"{BASEURL_ENV}:", "OTHER_VARIABLE:"),
]


def self_check(text: str) -> list[str]:
    """Problems with the lint itself: breakages of ``text`` that it does not catch."""
    out = []
    for what, old, new in BREAKAGES:
        if old not in text:
            out.append(f"self-check: cannot apply {what!r} ({old!r} is not in the file)")
        elif not lint_text(text.replace(old, new, 1)):
            out.append(f"self-check: {what} ({old!r} -> {new!r}) was not caught")
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", type=Path, help="workflow files (.yml)")
    parser.add_argument("--self-check", action="store_true",
                        help="also check that broken copies of each file are rejected")
    args = parser.parse_args(argv)
    failed = False
    for path in args.files:
        text = path.read_text(encoding="utf-8")
        problems = lint_text(text)
        if args.self_check:
            problems += self_check(text)
        for problem in problems:
            print(f"{path}: {problem}")
        failed |= bool(problems)
        if not problems:
            print(f"{path}: ok" + (f" (and {len(BREAKAGES)} broken copies rejected)"
                                   if args.self_check else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
