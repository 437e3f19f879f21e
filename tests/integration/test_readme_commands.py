"""The README opens with the two commands, and its "Your own data" block is made of commands the tutorial pages'
test (tests/integration/test_docs_examples.py) runs as written: a change that breaks what a newcomer types first fails there."""

from __future__ import annotations

import re

from conftest import ROOT


def _bash_blocks() -> list[list[str]]:
    text = (ROOT / "README.md").read_text()
    return [[ln for ln in b.splitlines() if ln.strip()] for b in re.findall(r"```bash\n(.*?)```", text, re.S)]


def test_readme_opens_with_the_two_commands():
    first = _bash_blocks()[0]
    assert first[0].startswith("./scripts/bootstrap && ") and ".venv/bin/fairmiss run" in first[0]
    assert first[1] == './scripts/bootstrap && .venv/bin/python -m pytest -m "not slow" -p no:cacheprovider'
    ci = (ROOT / ".ci" / "run").read_text()
    assert '.venv/bin/python -m pytest -m "not slow" -p no:cacheprovider ' in ci  # CI runs the README's command


def _command(line: str) -> str:
    return line.split("  #")[0].strip()


def test_own_data_block_runs_as_written():
    """Every line of the README's own-data block (but the reader's ``$EDITOR`` step) is, word for word, a command
    that tests/integration/test_docs_examples.py executes in page order: ``ingest``, ``validate``, ``run`` and
    ``compare`` of the experiment the ingest wrote, in one block of docs/own_data.md; so the block is run once, there."""
    from test_docs_examples import PAGES, bash_lines, blocks

    readme = next(b for b in _bash_blocks() if any("fairmiss ingest examples/" in ln for ln in b))
    wanted = [_command(ln) for ln in readme if not ln.startswith("$EDITOR")]
    assert [c.split()[1] for c in wanted] == ["ingest", "validate", "run", "compare"]
    executed = {}
    for page in PAGES:
        for b in blocks(page):
            if b.lang == "bash" and b.not_run is None:
                executed[b.where] = [_command(ln) for ln in bash_lines(b.code)]
    first = next((w for w, cmds in executed.items() if cmds[:4] == wanted), None)
    assert first is not None and first.startswith("docs/own_data.md"), \
        f"no executed block of the tutorial pages runs {wanted} in order: {executed}"
    # the experiment the README compares is the one its ingest writes (the starter config's name)
    assert wanted[3].split()[-1] == "own_credit" and "--out credit.yaml" in wanted[0]
