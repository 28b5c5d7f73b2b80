"""tools/check_workflow.py: the workflow lint that `make test` runs on .github/workflows/*.yml.

The generic checks are check-jsonschema's (its copy of GitHub's workflow schema); the lint adds
what only this project knows (pinned actions, the Makefile's targets, the publishing chain)."""
from __future__ import annotations

import shutil
import socket
import subprocess
from pathlib import Path

import pytest

from tools import check_workflow

ROOT = Path(__file__).resolve().parents[1]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
TEXT = (ROOT / ".github" / "workflows" / "pages.yml").read_text(encoding="utf-8")


def test_the_projects_workflows_pass_and_every_broken_copy_is_rejected(capsys):
    assert WORKFLOWS
    assert check_workflow.main(["--self-check", *map(str, WORKFLOWS)]) == 0
    assert "broken copies rejected" in capsys.readouterr().out


@pytest.mark.skipif(shutil.which("check-jsonschema") is None, reason="check-jsonschema not on PATH")
def test_the_schema_verdicts_are_those_of_the_check_jsonschema_command(tmp_path):
    copies = {"good": TEXT, "misspelt": TEXT.replace("runs-on:", "run-on:", 1),
              "refused": TEXT.replace("id-token: write", "id-token: read", 1)}
    for name, text in copies.items():
        (tmp_path / f"{name}.yml").write_text(text, encoding="utf-8")
    command = subprocess.run(["check-jsonschema", "--builtin-schema", check_workflow.SCHEMA,
                              *(str(tmp_path / f"{name}.yml") for name in copies)],
                             capture_output=True, text=True)
    rejected = {name for name in copies if f"{name}.yml::" in command.stdout}
    ours = {name for name, text in copies.items()
            if check_workflow.schema_errors(check_workflow.load(text))}
    assert command.returncode == 1 and rejected == ours == {"misspelt", "refused"}, command.stdout


def test_a_schema_error_names_the_place_and_the_cause():
    errors = check_workflow.schema_errors(check_workflow.load(TEXT.replace("runs-on:", "run-on:", 1)))
    assert errors == ["schema: jobs/build: 'runs-on' is a required property"]
    broken = check_workflow.load(TEXT.replace("id-token: write", "id-token: read", 1))
    assert check_workflow.schema_errors(broken) == [
        "schema: jobs/deploy/permissions/id-token: 'read' is not one of ['write', 'none']"]


def test_the_schema_is_read_with_no_network(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the workflow lint used the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    check_workflow.workflow_validator.cache_clear()
    assert check_workflow.lint_text(TEXT) == []
    assert check_workflow.lint_text(TEXT.replace("runs-on:", "run-on:", 1))


def test_what_the_schema_cannot_see_is_checked_by_hand():
    problems = check_workflow.lint_text(TEXT.replace("actions/deploy-pages@v5",
                                                     "actions/deploy-pages@main", 1))
    assert any("not pinned to a release or a commit" in p for p in problems)
    assert not any(p.startswith("schema:") for p in problems)
    problems = check_workflow.lint_text(TEXT.replace("run: make site", "run: make sit", 1))
    assert any("`make sit`: no such target in the Makefile" in p for p in problems)
