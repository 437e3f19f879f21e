"""The tutorials' code runs as written: every fenced ``bash`` and ``python`` block of the tutorial pages is
executed, in page order, in a fresh project directory of its own, so a change that breaks what the docs tell
a reader to type fails here.

Per page:

* the project directory holds ``params/`` (a copy), ``data/raw/`` (links to the mirror's raw files) and links to
  the checkout's ``.venv`` and ``examples/`` (:func:`badinput.make_project`), plus an empty ``mlruns/``; the
  MLflow store is ``sqlite:///<project>/mlruns/mlflow.db`` (``MLFLOW_TRACKING_URI``), Prefect gets its own
  ``PREFECT_HOME`` and fairmiss its own state and cache directories; as for a reader, the first flow starts
  the local Prefect server (in that state directory) and the page's later commands reuse it; it is stopped
  when the page ends (``fairmiss server stop``). With a temporary Prefect server per command instead, the
  seven commands of ``own_data.md`` took 255 s beside the default suite, 31-41 s each;
* ``bash`` blocks run line by line, each line through ``bash -c`` with ``.venv/bin`` first on ``PATH``; every
  line must exit 0;
* ``python`` blocks run in one interpreter session per page (the blocks in order, sharing their names, as
  in a notebook), interleaved with the ``bash`` blocks in page order; a block must not raise;
* a ``yaml`` / ``toml`` block with a ``title="FILE"`` (rendered as the file's name) is written to ``FILE`` in
  the project when it is reached, so the commands after it find it;
* every other fence must name its language (``text`` for output samples and command synopses, ``yaml`` /
  ``toml`` for excerpts): an unlabelled fence fails, so nothing is left out silently.

A block a reader cannot run as is (a placeholder, a server left in the foreground, a step that installs into
the environment) carries ``<!-- not-run: REASON -->`` on the line before its fence. Such blocks are listed
with their reasons on the terminal, and every page must have at least one executed block.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from badinput import make_project


ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"

# Tutorial pages (the reader's path: install, own data / estimators / notebook API / model audit, tracking,
# comparing). Pages whose blocks need hours or a cluster (papers, DVC, schedules) are not among them.
PAGES = ["getting-started.md", "own_data.md", "tracking.md", "compare.md"]
# Tutorial pages with no command at all: checked to stay that way, so a command added there is run too.
PROSE_PAGES = ["concepts.md"]

RUN_LANGS = {"bash", "python"}
FILE_LANGS = {"yaml", "toml"}
SHOW_LANGS = {"text", "yaml", "toml"}
NOT_RUN = re.compile(r"^<!--\s*not-run:\s*(?P<reason>.+?)\s*-->\s*$")
FENCE = re.compile(r"^(?P<ticks>`{3,})(?P<info>[^`]*)$")
TITLE = re.compile(r'title="(?P<title>[^"]+)"')
LINE_TIMEOUT = 900
DONE = "@@fairmiss-docs-block-done@@"


@dataclass
class Block:
    page: str
    line: int  # 1-based line of the opening fence
    lang: str
    info: str
    code: str
    not_run: str | None = None

    @property
    def title(self) -> str | None:
        m = TITLE.search(self.info)
        return m.group("title") if m else None

    @property
    def where(self) -> str:
        return f"docs/{self.page}:{self.line}"


@dataclass
class Outcome:
    executed: list[Block] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)  # per executed block, for the report
    skipped: list[Block] = field(default_factory=list)
    written: list[Block] = field(default_factory=list)
    shown: list[Block] = field(default_factory=list)


def blocks(page: str, text: str | None = None) -> list[Block]:
    """The fenced blocks of ``docs/<page>`` in order, each with its ``not-run`` reason if marked."""
    lines = (DOCS / page).read_text(encoding="utf-8").splitlines() if text is None else text.splitlines()
    out: list[Block] = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i].strip())  # indented fences (in list items) count too
        if m is None:
            if NOT_RUN.match(lines[i].strip()):
                nxt = lines[i + 1].strip() if i + 1 < len(lines) else ""
                assert nxt.startswith("```"), f"docs/{page}:{i + 1}: a not-run marker must be right before a fence"
            i += 1
            continue
        indent = len(lines[i]) - len(lines[i].lstrip())
        ticks, info = m.group("ticks"), m.group("info").strip()
        end = i + 1
        while end < len(lines) and lines[end].strip() != ticks:
            end += 1
        assert end < len(lines), f"docs/{page}:{i + 1}: unclosed fence"
        prev = NOT_RUN.match(lines[i - 1].strip()) if i > 0 else None
        lang = info.split()[0] if info else ""
        code = "\n".join(ln[indent:] if not ln[:indent].strip() else ln.lstrip() for ln in lines[i + 1:end])
        out.append(Block(page, i + 1, lang, info, code + "\n", prev.group("reason") if prev else None))
        i = end + 1
    return out


def bash_lines(code: str) -> list[str]:
    """The commands of a bash block: non-empty lines, backslash continuations joined."""
    out, cur = [], ""
    for ln in code.splitlines():
        if ln.rstrip().endswith("\\"):
            cur += ln.rstrip()[:-1] + " "
            continue
        cur += ln
        if cur.strip() and not cur.strip().startswith("#"):
            out.append(cur.strip())
        cur = ""
    return out


_DRIVER = r"""
import json, sys, traceback
ns = {"__name__": "__main__"}
for raw in sys.stdin:
    msg = json.loads(raw)
    try:
        exec(compile(msg["code"], msg["where"], "exec"), ns)
        res = {"ok": True}
    except BaseException:
        res = {"ok": False, "error": traceback.format_exc()}
    sys.stdout.flush(); sys.stderr.flush()
    print("\n" + DONE + json.dumps(res), flush=True)
""".replace("DONE", repr(DONE))


class PythonSession:
    """One interpreter (the project's ``.venv/bin/python``) that runs a page's python blocks in order."""

    def __init__(self, proj: Path, env: dict, log: Path):
        self.log = log.open("w")
        self.proc = subprocess.Popen([str(proj / ".venv" / "bin" / "python"), "-u", "-c", _DRIVER], cwd=proj,
                                     env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log,
                                     text=True)
        self.logpath = log

    def run(self, block: Block) -> tuple[bool, str]:
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(json.dumps({"code": block.code, "where": block.where}) + "\n")
        self.proc.stdin.flush()
        out = []
        for line in self.proc.stdout:
            if line.startswith(DONE):
                res = json.loads(line[len(DONE):])
                return res["ok"], "".join(out)[-3000:] + res.get("error", "")
            out.append(line)
        return False, "".join(out)[-3000:] + "\n(interpreter exited)\n" + self.logpath.read_text()[-3000:]

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout:
            self.proc.stdout.close()
        self.log.close()


def project(tmp_path: Path) -> tuple[Path, dict]:
    proj = make_project(tmp_path)
    (proj / ".venv").symlink_to(ROOT / ".venv")
    (proj / "examples").symlink_to(ROOT / "examples")
    (proj / "mlruns").mkdir()
    state = tmp_path / "state"
    env = {k: v for k, v in os.environ.items()
           if k not in ("PREFECT_API_URL", "FAIRMISS_RAW_DIR", "PYTHONPATH", "VIRTUAL_ENV")}
    env.update({
        "PATH": f"{proj / '.venv' / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        "MLFLOW_TRACKING_URI": f"sqlite:///{proj / 'mlruns' / 'mlflow.db'}",
        "PREFECT_HOME": str(state / "prefect"),
        "FAIRMISS_STATE_DIR": str(state / "fairmiss"),
        "FAIRMISS_CACHE_DIR": str(state / "cache"),
        "FAIRMISS_PREFECT_SERVER": "auto",
        "HOME": str(state / "home"),
        "MPLBACKEND": "Agg",
    })
    for d in ("prefect", "fairmiss", "cache", "home"):
        (state / d).mkdir(parents=True)
    return proj, env


def run_page(page: str, tmp_path: Path, text: str | None = None) -> Outcome:
    """Execute the page's blocks in order in a fresh project; fail on the first block that fails."""
    proj, env = project(tmp_path)
    res = Outcome()
    session: PythonSession | None = None
    try:
        for b in blocks(page, text):
            if b.not_run is not None:
                res.skipped.append(b)
                continue
            if b.lang in FILE_LANGS and b.title:
                dest = proj / b.title
                assert not dest.exists(), f"{b.where}: {b.title} would overwrite a project file"
                dest.write_text(b.code, encoding="utf-8")
                res.written.append(b)
                continue
            if b.lang in SHOW_LANGS:
                res.shown.append(b)
                continue
            t_block = time.monotonic()
            assert b.lang in RUN_LANGS, (f"{b.where}: fence language {b.lang!r}: name it (``text`` for output "
                                         f"samples and synopses) or mark the block <!-- not-run: REASON -->")
            if b.lang == "bash":
                for cmd in bash_lines(b.code):
                    t0 = time.monotonic()
                    r = subprocess.run(["bash", "-c", cmd], cwd=proj, env=env, capture_output=True, text=True,
                                       timeout=LINE_TIMEOUT)
                    assert r.returncode == 0, (f"{b.where}: `{cmd}` exited {r.returncode} after "
                                               f"{time.monotonic() - t0:.0f} s\n--- stdout\n{r.stdout[-3000:]}\n"
                                               f"--- stderr\n{r.stderr[-4000:]}")
            else:
                if session is None:
                    session = PythonSession(proj, env, tmp_path / "python-session.log")
                ok, out = session.run(b)
                assert ok, f"{b.where}: python block failed (session of docs/{page})\n{out}"
            res.executed.append(b)
            res.seconds[b.where] = time.monotonic() - t_block
    finally:
        if session is not None:
            session.close()
        # the page's local Prefect server, if a command started one (no-op otherwise)
        subprocess.run([sys.executable, "-m", "flows.cli", "server", "stop", "--force"], cwd=proj,
                       env=env, capture_output=True, text=True, timeout=120)
    return res


def _report(page: str, res: Outcome, seconds: float) -> str:
    lines = [f"docs/{page}: {len(res.executed)} block(s) executed, {len(res.skipped)} not run, "
             f"{len(res.written)} file(s) written, {len(res.shown)} shown only ({seconds:.0f} s)"]
    lines += [f"  ran      {b.where} ({b.lang}) in {res.seconds.get(b.where, 0):.0f} s" for b in res.executed]
    lines += [f"  not run  {b.where} ({b.lang}): {b.not_run}" for b in res.skipped]
    lines += [f"  written  {b.where}: {b.title}" for b in res.written]
    return "\n".join(lines)


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES)
def test_tutorial_blocks_run_as_written(page, tmp_path, capsys):
    t0 = time.monotonic()
    res = run_page(page, tmp_path)
    with capsys.disabled():
        print("\n" + _report(page, res, time.monotonic() - t0))
    assert res.executed, f"docs/{page}: no block was executed"
    assert all(b.not_run.strip() for b in res.skipped)


@pytest.mark.parametrize("page", PROSE_PAGES)
def test_prose_pages_hold_no_commands(page):
    runnable = [b.where for b in blocks(page) if b.lang in RUN_LANGS or not b.lang]
    assert not runnable, f"commands on docs/{page}: add the page to PAGES so that they are run: {runnable}"


def test_markers_are_parsed():
    text = ("intro\n<!-- not-run: needs your file -->\n```bash\nfairmiss run <yours>.yaml\n```\n\n"
            '```yaml title="a.yaml"\nexperiment: a\n```\n```text\nout\n```\n```python\nx = 1\n```\n'
            "- a step:\n\n    ```python\n    if x:\n        y = 2\n    ```\n")
    bs = blocks("x.md", text)
    assert [(b.lang, b.not_run, b.title) for b in bs] == [
        ("bash", "needs your file", None), ("yaml", None, "a.yaml"), ("text", None, None), ("python", None, None),
        ("python", None, None)]
    assert bs[-1].code == "if x:\n    y = 2\n"
    assert bash_lines("a \\\n  b\n\n# note\nc  # x\n") == ["a    b", "c  # x"]


def test_a_broken_call_fails(tmp_path):
    """A page whose documented call is wrong fails the run, naming the block (the guard this file is for)."""
    text = "```bash\nfairmiss --version\n```\n\n```python\nfrom flows.api import run_it\n```\n"
    with pytest.raises(AssertionError, match=r"(?s)x\.md:5: python block failed.*ImportError"):
        run_page("x.md", tmp_path, text)


def test_block_indentation_is_kept_relative_to_its_fence():
    """A top-level YAML block keeps its nesting; a fence indented in a list item loses only that indent."""
    page = ("```yaml\nlearners:\n  - kind: estimator\n    name: gbm\n```\n"
            "1. step\n\n   ```bash\n   fairmiss run x.yaml\n   ```\n")
    top, listed = blocks("inline.md", page)
    assert top.code == "learners:\n  - kind: estimator\n    name: gbm\n"
    assert listed.code == "fairmiss run x.yaml\n"
