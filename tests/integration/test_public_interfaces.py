"""fairmiss uses MLflow's and Prefect's public interfaces only: no module reads or writes their database tables
with SQL, and none uses a private attribute of mlflow, prefect or sqlalchemy, except the exceptions listed in
docs/development.md ("Public interfaces only"), each of which is checked to be still needed.

The scanner reads the product's sources (src/, flows/, tasks/, scripts/) with ``ast``: SQL statements in string
literals, ``sqlite3.connect`` calls, imports of private modules (a path component starting with ``_``) and
attribute accesses ``x._name`` whose chain starts at a name imported from those packages. A positive control
feeds it the code this rule removed (the SQL up-to-date check, the store template)."""

from __future__ import annotations

import ast
import re
import sqlite3
from pathlib import Path

import pytest
from conftest import ROOT

PACKAGES = ("mlflow", "prefect", "sqlalchemy", "alembic")
SQL = re.compile(r"(?is)\b(select\b.+\bfrom|insert\s+into|update\s+\w+\s+set|delete\s+from|create\s+table|"
                 r"drop\s+table|alter\s+table)\b")
#: (file, enclosing function, what): the exceptions of docs/development.md
ALLOWED = {
    ("src/fairmiss/tracking/store.py", "_enable_wal", "sqlite3.connect"),
    ("src/fairmiss/tracking/tracker.py", "log_dataset", "_to_mlflow_entity"),
    ("src/fairmiss/tracking/models.py", "_model_registry", "mlflow.tracking._model_registry"),
    ("src/fairmiss/tracking/models.py", "_model_registry", "mlflow.tracking._tracking_service"),
    ("src/fairmiss/tracking/models.py", "_model_registry", "_tracking_uri"),
    ("src/fairmiss/tracking/models.py", "_model_registry", "_registry_uri"),
}


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def findings(source: str, path: str) -> set[tuple[str, str, str]]:
    """``(path, enclosing function, what)`` for every use the rule forbids in ``source``."""
    tree = ast.parse(source)
    parents: dict[ast.AST, ast.AST] = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[child] = node

    def where(node) -> str:
        while node in parents:
            node = parents[node]
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                return node.name
        return "<module>"

    theirs: set[str] = set()  # local names bound to something imported from the packages
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] in PACKAGES:
                    theirs.add((a.asname or a.name).split(".")[0])
                    if any(_private(p) for p in a.name.split(".")):
                        out.add((path, where(node), a.name))
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in PACKAGES:
            if any(_private(p) for p in node.module.split(".")):
                out.add((path, where(node), node.module))
            for a in node.names:
                theirs.add(a.asname or a.name)
                if _private(a.name):
                    out.add((path, where(node), a.name))
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and SQL.search(node.value):
            out.add((path, where(node), "SQL: " + " ".join(node.value.split())[:60]))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id in ("getattr", "setattr", "hasattr", "delattr") and len(node.args) >= 2
              and isinstance(node.args[0], ast.Name) and node.args[0].id in theirs
              and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)
              and _private(node.args[1].value)):
            out.add((path, where(node), node.args[1].value))
        elif isinstance(node, ast.Attribute):
            root = node.value
            while isinstance(root, (ast.Attribute, ast.Call, ast.Subscript)):
                root = root.func if isinstance(root, ast.Call) else root.value
            if isinstance(root, ast.Name):
                if root.id == "sqlite3" and node.attr == "connect":
                    out.add((path, where(node), "sqlite3.connect"))
                elif root.id in theirs and _private(node.attr):
                    out.add((path, where(node), node.attr))
    return out


def _product_files():
    for top in ("src", "flows", "tasks", "scripts"):
        for f in sorted((ROOT / top).rglob("*.py")):
            yield f


def test_no_sql_on_their_tables_and_no_private_attributes():
    found = set()
    for f in _product_files():
        found |= findings(f.read_text(), str(f.relative_to(ROOT)))
    assert found - ALLOWED == set(), sorted(found - ALLOWED)
    assert ALLOWED - found == set(), f"listed exceptions no longer used (drop them): {sorted(ALLOWED - found)}"


def test_the_scanner_finds_what_the_rule_removed():
    old = '''
import sqlite3
from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

_QUERY = """
SELECT r.run_uuid FROM runs r JOIN tags t ON t.run_uuid = r.run_uuid WHERE t.key = 'run.fingerprint'
"""


def newest(db):
    con = sqlite3.connect(db)
    return con.execute(_QUERY).fetchall()


def template(con, uri):
    con.execute("DELETE FROM experiments WHERE experiment_id = 0")
    SqlAlchemyStore._engine_map.pop(uri, None)
'''
    got = {what for _, _, what in findings(old, "old.py")}
    assert "sqlite3.connect" in got and "_engine_map" in got
    assert sum(w.startswith("SQL: ") for w in got) == 2


def test_each_exception_still_needed(tmp_path):
    """Each listed exception works around something upstream lacks; this fails when upstream gains it."""
    import mlflow
    from mlflow import MlflowClient
    from mlflow.data.pandas_dataset import PandasDataset
    from mlflow.tracking._model_registry import utils as registry_utils

    # log_dataset: no public converter from a dataset to the entity MlflowClient.log_inputs takes
    assert hasattr(PandasDataset, "_to_mlflow_entity")
    assert not [n for n in dir(PandasDataset) if "entity" in n and not n.startswith("_")]
    # _model_registry: no public way to tell an unset registry URI from a set one, to restore it
    assert hasattr(registry_utils, "_registry_uri") and not hasattr(mlflow, "is_registry_uri_set")
    # _enable_wal: a store MLflow creates is not in write-ahead-log mode by itself
    db = tmp_path / "mlflow.db"
    MlflowClient(f"sqlite:///{db}").search_experiments(max_results=1)
    con = sqlite3.connect(db)
    try:
        assert con.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal"
    finally:
        con.close()


@pytest.mark.parametrize("snippet,expect", [
    ("import prefect\nprefect.context._get_run_context()", "_get_run_context"),
    ("from prefect.server.database import _orm\n", "_orm"),
    ("import mlflow\nmlflow.tracking._tracking_service.utils._tracking_uri = None", "_tracking_service"),
    ("from sqlalchemy import text\nx = text('UPDATE runs SET status = 1')", "SQL: UPDATE runs SET status = 1"),
    ("from mlflow.tracking import fluent\ngetattr(fluent, '_active_run_stack', None)", "_active_run_stack"),
])
def test_the_scanner_on_small_cases(snippet, expect):
    assert any(w == expect or w.startswith(expect) for _, _, w in findings(snippet, "x.py")), findings(snippet, "x.py")
