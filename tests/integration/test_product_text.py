"""The product's own text — README, the documentation site, the configs and the benchmark records — speaks of
the product: no absolute paths of a working machine, no work-diary phrases (numbered work periods, "this
machine ran …"), no internal issue labels a reader cannot open. Scope: ``README.md``, ``docs/**/*.md``,
``params/**/*.yaml``, ``bench/**/*.md``, ``dvc.yaml``, the YAML of ``tests`` and ``examples``; and the code's comments and docstrings (``src``, ``flows``, ``tasks``,
``tests``, ``bench``, ``scripts``) for internal issue labels (tests may name machine paths they create)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

PATTERNS = {
    # an absolute path on a working machine; a URL's path (https://host/home/…) is preceded by a word character
    "machine path": re.compile(r"(?<![\w.~/-])/(?:work|tmp|root|home)/"),
    "work diary": re.compile(r"\bsession \d+|\bthis session\b|\bthis machine ran\b|\bon a day this machine\b"
                             r"|\btoday\b|\bother engineers\b|\bthat machine ran\b", re.IGNORECASE),
    "internal issue label": re.compile(r"\b[Ii]ssues? [A-Z]\b|\([Ii]ssues? \d+\)|\b[Ii]ssues? #?\d+\b"),
}


def product_files() -> list[Path]:
    files = [ROOT / "README.md"]
    for folder, pattern in (("docs", "*.md"), ("params", "*.yaml"), ("bench", "*.md"), ("tests", "*.yaml"),
                            ("examples", "*.yaml"), ("examples", "*.md")):
        files += sorted((ROOT / folder).rglob(pattern))
    return files + [ROOT / "dvc.yaml"]


def offences(text: str) -> list[tuple[int, str, str]]:
    found = []
    for n, line in enumerate(text.splitlines(), 1):
        for what, pattern in PATTERNS.items():
            found += [(n, what, m.group(0)) for m in pattern.finditer(line)]
    return found


@pytest.mark.parametrize("text, what", [
    ("results were written to /tmp/s/results", "machine path"),
    ("export FAIRMISS_DATA_MIRROR=/work/shared/data/raw", "machine path"),
    ("in session 17 the run took", "work diary"),
    ("on a day this machine ran 2x slower", "work diary"),
    ("not measurable on this machine today", "work diary"),
    ("other engineers' test suites", "work diary"),
    ("the default since issue N", "internal issue label"),
    ("two stated limits (issue 18)", "internal issue label"),
    ("see issue #12", "internal issue label"),
])
def test_the_scanner_finds(text, what):
    assert [w for _, w, _ in offences(text)] == [what]


@pytest.mark.parametrize("text", [
    "https://github.com/propublica/compas-analysis/raw/home/file.csv",
    "results/<experiment>/metrics.json and ~/.cache/fairmiss",
    "a session of Prefect's server; an issue with the store",
])
def test_the_scanner_passes(text):
    assert offences(text) == []


def test_product_files_speak_of_the_product():
    files = product_files()
    assert len(files) > 40 and ROOT / "README.md" in files and ROOT / "docs" / "index.md" in files
    bad = [f"{p.relative_to(ROOT)}:{n}: {what}: {hit!r}"
           for p in files for n, what, hit in offences(p.read_text(encoding="utf-8"))]
    assert not bad, "\n".join(bad)


def test_code_cites_no_internal_issue_labels():
    """A reader of the code cannot open "issue P": comments and docstrings say what and why instead."""
    label = PATTERNS["internal issue label"]
    files = [p for folder in ("src", "flows", "tasks", "tests", "bench", "scripts") for p in (ROOT / folder).rglob("*.py")
             if p.name != "test_product_text.py"]  # this file holds the scanner's own examples
    assert len(files) > 200
    bad = [f"{p.relative_to(ROOT)}:{n}: {m.group(0)!r}" for p in files
           for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) for m in label.finditer(line)]
    assert not bad, "\n".join(bad)


def test_code_names_no_working_machine_and_keeps_no_diary():
    """The code, tests, benchmarks and scripts name no directory of a working machine (``/work/…``: the data
    mirror is ``../shared/data/raw`` beside the checkout, or ``FAIRMISS_DATA_MIRROR``) and keep no work diary
    (tests may still create and name ``/tmp`` paths of their own)."""
    machine = re.compile(r"(?<![\w.~/-])/work/")
    diary = PATTERNS["work diary"]
    files = [p for folder in ("src", "flows", "tasks", "tests", "bench", "scripts") for p in (ROOT / folder).rglob("*")
             if p.is_file() and p.suffix in ("", ".py", ".sh") and "__pycache__" not in p.parts
             and p.name != "test_product_text.py"]
    assert len(files) > 200
    bad = [f"{p.relative_to(ROOT)}:{n}: {m.group(0)!r}" for p in files
           for n, line in enumerate(p.read_text(encoding="utf-8", errors="replace").splitlines(), 1)
           for pat in (machine, diary) for m in pat.finditer(line)]
    assert not bad, "\n".join(bad)
