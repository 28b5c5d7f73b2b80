"""The kernel the book build runs its notebooks in delivers every message of a cell, also to a
reader that lags (tools/book_kernel/, tools/book_site.py).

A cell that builds 3-D views sends thousands of widget messages; a reader that falls behind
(a busy build) lost some of them with IPython's stock kernel, whose IOPub publisher drops what
it cannot queue.  The check: one cell displays 20,000 outputs while the reader waits, then the
reader counts what arrives.
"""
from __future__ import annotations

import os
import queue
import time
from pathlib import Path

import pytest
import yaml

from tools import book_site

ROOT = Path(__file__).resolve().parents[1]

#: outputs of the one cell; the reader waits READER_LAG_S before it reads any
N_OUTPUTS = 20_000
READER_LAG_S = 6.0


def book_kernel_name() -> str:
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    return config["sphinx"]["config"]["nb_kernel_rgx_aliases"]["python3"]


def outputs_received(kernel_name: str, monkeypatch) -> tuple[int, bool]:
    """(display messages of the cell that arrived, whether its idle status arrived)."""
    from jupyter_client.manager import start_new_kernel

    monkeypatch.setenv("JUPYTER_PATH", book_site.with_book_kernels())
    km, kc = start_new_kernel(kernel_name=kernel_name)
    try:
        msg_id = kc.execute("from IPython.display import display\n"
                            f"for i in range({N_OUTPUTS}):\n"
                            "    display({'text/plain': str(i)}, raw=True)")
        time.sleep(READER_LAG_S)
        seen, idle = 0, False
        while not idle:
            try:
                msg = kc.get_iopub_msg(timeout=10)
            except queue.Empty:
                break
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            seen += msg["msg_type"] == "display_data"
            idle = (msg["msg_type"] == "status"
                    and msg["content"]["execution_state"] == "idle")
        return seen, idle
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def test_the_book_build_runs_its_notebooks_in_the_kernel_of_tools_book_kernel():
    name = book_kernel_name()
    spec = book_site.BOOK_KERNELS / "kernels" / name / "kernel.json"
    assert spec.is_file(), f"_config.yml maps python3 to {name!r}, which {spec} should define"
    parts = book_site.with_book_kernels({"JUPYTER_PATH": os.pathsep.join(["/a", str(
        book_site.BOOK_KERNELS)])}).split(os.pathsep)
    assert parts == [str(book_site.BOOK_KERNELS), "/a"]


@pytest.mark.slow
def test_the_book_kernel_delivers_every_output_to_a_reader_that_lags(monkeypatch):
    seen, idle = outputs_received(book_kernel_name(), monkeypatch)
    assert (seen, idle) == (N_OUTPUTS, True)


@pytest.mark.slow
def test_the_stock_kernel_drops_outputs_when_its_reader_lags(monkeypatch):
    # why the build has a kernel of its own: the same cell in IPython's kernel loses messages
    pytest.importorskip("ipykernel")
    seen, idle = outputs_received("python3", monkeypatch)
    assert seen < N_OUTPUTS
