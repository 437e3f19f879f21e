"""docs/kinds.md is the config surface on one page and stays current: it equals `fairmiss validate --kinds`
(regenerate with `python -m flows.cli validate --kinds > docs/kinds.md`)."""
import subprocess
import sys

from conftest import ROOT


def test_docs_kinds_md_is_current():
    # the command itself, in a fresh process: in this one, configs loaded by other tests may have registered
    # derived variants (a dataset with other groups, `dataset.group`), which a fresh process does not list
    r = subprocess.run([sys.executable, "-m", "flows.cli", "validate", "--kinds"], cwd=ROOT, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert (ROOT / "docs" / "kinds.md").read_text() == r.stdout


def test_kinds_lists_every_family_and_an_added_kind_of_each():
    from fairmiss.config.kinds import describe_kinds

    text = describe_kinds()
    for heading in ("## Datasets", "## Missingness mechanisms", "## Imputers", "## Learners", "## Metrics"):
        assert heading in text
    for added in ("`adult_race`", "`mcar_block`", "`random_sample`", "`naive_bayes`", "`precision`"):
        assert added in text
    assert "`fairmiss.learners.fair_mip_forest.spec`" in text  # a paper method's kind, from its package


def test_cli_validate_kinds_and_validate_without_config():
    r = subprocess.run([sys.executable, "-m", "flows.cli", "validate", "--kinds"], cwd=ROOT, capture_output=True,
                       text=True)
    assert r.returncode == 0 and "## Learners" in r.stdout
    r = subprocess.run([sys.executable, "-m", "flows.cli", "validate"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 2 and "needs a CONFIG" in r.stderr
