"""The notebook panel: ``examples/notebook/live_panel.ipynb`` executed headless by a real kernel, and
rendered in JupyterLab in Chromium, where its charts are drawn and grow while a cell trains."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from support.helpers import SRC, free_port, run_script, wait_until
from tunetrack.reader import list_runs
from tunetrack.reader.as_text import number

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "notebook" / "live_panel.ipynb"
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "notebook"


def panels(nb) -> list[dict]:
    """The state of every tunetrack panel the notebook saved (nbclient stores the widget state)."""
    state = nb.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    return [m["state"] for m in state.values() if "series" in m["state"]]


def test_the_example_notebook_runs_with_a_live_panel(root, monkeypatch):
    import nbclient
    import nbformat

    monkeypatch.setenv("TUNETRACK_DIR", str(root))
    monkeypatch.setenv("PYTHONPATH", SRC)
    nb = nbformat.read(EXAMPLE, as_version=4)
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3", store_widget_state=True).execute()

    display, train, project = (c for c in nb.cells if c.cell_type == "code")
    widget = "application/vnd.jupyter.widget-view+json"
    assert widget in display.outputs[0]["data"]  # the Tracker as the cell's value is the panel
    assert train.outputs == []  # nothing printed per step
    assert widget in project.outputs[0]["data"]

    (run,) = list_runs(root)
    live, final = panels(nb)
    # shown before the first step, the live panel was fed while the next cell trained
    assert live["runs"][0]["id"] == run.id and live["runs"][0]["step"] > 1
    assert final["runs"] == [
        {"id": run.id, "name": "linear", "project": "notebook-demo", "state": "finished", "step": 60}
    ]
    steps, values = final["series"][run.id]["loss"]
    assert steps == list(range(1, 61)) and values == run.series("loss").values.tolist()
    steps, values = final["series"][run.id]["eval/loss"]
    assert [s for s, v in zip(steps, values) if v is not None] == [10, 20, 30, 40, 50, 60]  # None: gaps
    # the latest samples, worded as the report words them (samples_text), under the charts
    (table,) = final["samples"]
    logged = run.samples("predictions", step=60)
    assert (table["run"], table["key"], table["step"], table["steps"], table["total"]) == (
        run.id,
        "predictions",
        60,
        6,
        4,
    )
    assert [c for c, _ in table["columns"]] == ["input", "target", "prediction", "error"]
    assert [r["cells"][0] for r in table["rows"]] == [s["row"]["input"] for s in logged]
    assert [r["cells"][2] for r in table["rows"]] == [number(s["row"]["prediction"]) for s in logged]


def test_show_finds_runs_and_projects_and_says_what_is_missing(root):
    # in a fresh interpreter, as a notebook's kernel is: widgets made here would stay in this process
    out = run_script(
        f"""
        import json
        import pytest
        from tunetrack import Tracker, show
        from tunetrack.errors import RunNotFound

        ids = []
        for name, loss in (("a", 1.0), ("b", 2.0)):
            # ids that start with the project's name: "p" still names the project, not a run
            t = Tracker(dir={str(root)!r}, project="p", name=name, id=f"p{{name}}0001", system=False).start()
            t.log({{"loss": loss}}, step=1)
            t.finish()
            ids.append(t.id)
        errors = []
        for what in ("nope", Tracker(dir={str(root)!r})):
            try:
                show(what, dir={str(root)!r})
            except RunNotFound as exc:
                errors.append(str(exc))
        print(json.dumps({{
            "ids": ids,
            "project": [r["name"] for r in show("p", dir={str(root)!r}).runs],
            "by_name": show("a", dir={str(root)!r}).runs[0]["id"],
            "newest": show(dir={str(root)!r}).runs[0]["id"],
            "errors": errors,
        }}))
        """
    ).stdout
    got = json.loads(out.strip().splitlines()[-1])
    a, b = got["ids"]
    assert got["project"] == ["b", "a"]  # a project: its runs, newest first
    assert got["by_name"] == a and got["newest"] == b
    assert got["errors"] == [
        "no run or project 'nope' in the store",
        "this tracker has not started its run yet: log something first",
    ]


def test_jupyterlab_draws_the_panel_and_it_grows(tmp_path, root):
    from playwright import sync_api as playwright  # the notebook session installs it

    work = tmp_path / "lab"
    work.mkdir()
    notebook = work / "live_panel.ipynb"
    shutil.copy(EXAMPLE, notebook)
    port, token = free_port(), "t0ken"
    lab = subprocess.Popen(
        [shutil.which("jupyter-lab", path=os.path.dirname(sys.executable)) or "jupyter-lab"]
        + [
            "--no-browser",
            "--allow-root",
            "--ip=127.0.0.1",
            f"--port={port}",
            f"--IdentityProvider.token={token}",
        ]
        + [f"--ServerApp.root_dir={work}", f"--LabApp.user_settings_dir={tmp_path / 'settings'}"]
        + [f"--LabApp.workspaces_dir={tmp_path / 'workspaces'}"],
        env={**os.environ, "PYTHONPATH": SRC, "TUNETRACK_DIR": str(root)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_until(lambda: _answers(f"http://127.0.0.1:{port}/api/status?token={token}"), timeout=90)
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        with playwright.sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True)
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(f"http://127.0.0.1:{port}/lab/tree/live_panel.ipynb?token={token}")
            page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
            base = f"http://127.0.0.1:{port}/api/kernels?token={token}"
            wait_until(
                lambda: '"execution_state": "idle"' in _answers(base).replace('":"', '": "'), timeout=90
            )
            panel = page.locator(".tunetrack-panel").first
            for attempt in range(3):  # a click can land before the page's kernel connection is ready
                page.locator(".lm-MenuBar-item", has_text="Run").first.click()  # Run > Run All Cells
                page.locator(".lm-Menu-item", has_text="Run All Cells").first.click()
                try:
                    panel.wait_for(timeout=30_000)
                    break
                except playwright.TimeoutError:
                    page.screenshot(path=str(ARTIFACTS / f"jupyterlab-attempt{attempt}.png"))
            panel.wait_for(timeout=1000)
            seen = []
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and "finished" not in panel.inner_text():
                seen.append(int(panel.get_attribute("data-points") or 0))
                time.sleep(0.1)
            page.screenshot(path=str(ARTIFACTS / "jupyterlab.png"))
            growth = sorted(set(seen))
            assert len(growth) >= 3, f"the panel did not grow while the cell trained: {growth}"
            assert panel.locator("canvas").count() >= 2  # a chart per metric: loss and eval/loss
            assert panel.locator(".tt-sample tbody tr").count() == 4  # the last step's predictions
            assert "linear" in panel.inner_text()
            browser.close()
    finally:
        lab.terminate()
        lab.wait(timeout=30)


def _answers(url: str) -> str:
    """The body at ``url``, or "" while the server does not answer."""
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.read().decode()
    except OSError:
        return ""


def test_in_a_kernel_the_console_keeps_what_reaches_the_descriptors(root, monkeypatch):
    """docs/console.md#notebooks: a cell's ``print`` goes to the kernel's socket (not captured, still
    shown in the cell); C code, child processes and writes to fds 1 and 2 are captured, and still
    reach the cell through the kernel's own forwarding of its descriptors."""
    import nbclient
    import nbformat

    monkeypatch.setenv("PYTHONPATH", SRC)
    monkeypatch.delenv("PYTEST_CURRENT_TEST")  # ipykernel forwards its descriptors only outside pytest
    cell = f"""
import os, subprocess, sys
from tunetrack import Tracker
t = Tracker(dir={str(root)!r}, name="nb", system=False, console=True).start()
print("a cell's print")
os.write(1, b"written to fd 1\\n")
os.write(2, b"written to fd 2\\n")
subprocess.run([sys.executable, "-c", "print('a child process')"], check=True)
from tunetrack.reader import open_run
import time
deadline = time.monotonic() + 30  # as a cell that trains on would: the recorder has it by now
while "a child process" not in [l.text for l in open_run(t.id, dir={str(root)!r}).console()]:
    assert time.monotonic() < deadline
    time.sleep(0.05)
t.finish()
print("after finish")
"""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(cell)])
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    shown = "".join(o.get("text", "") for o in nb.cells[0].outputs if o.get("output_type") == "stream")
    for text in ("a cell's print", "written to fd 1", "written to fd 2", "a child process", "after finish"):
        assert text in shown, shown  # the cell shows what it showed without tunetrack
    (run,) = list_runs(root)
    lines = [(line.stream, line.text) for line in run.console()]
    assert ("stdout", "written to fd 1") in lines and ("stderr", "written to fd 2") in lines
    assert ("stdout", "a child process") in lines
    assert all("a cell's print" not in text for _, text in lines)  # the kernel's stream: not fd 1
