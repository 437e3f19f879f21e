"""Missingness shift (``kind: shift``): one mechanism on the training rows, another at test time.

``train`` and ``test`` are two missingness specs of any registered kind (not ``shift`` itself), e.g. MCAR at
training and label-driven missingness at deployment, or the same mechanism at another rate. The split's
train rows get ``train``'s draw and its test rows ``test``'s, both from the experiment's seeded generator
(train first, then test), so ``inject`` needs the split's ``test_rows``
(:func:`fairmiss.pipeline.make_split` passes them). The realised-rate gate is each mechanism's own gate on
its rows (the label reaches label-driven sub-specs); the group and the label are never masked.

**Several test scenarios, one fit.** ``tests: [{spec}, ...]`` instead of ``test`` (exclusive): the
Shades-of-Null protocol, fit once under the training scenario and evaluate many test scenarios. Each entry is
validated as a whole spec (errors name ``tests.<i>``) and named (an entry without a name is ``test<i>``, a
preset its preset's name; names must differ). The config's grid (:meth:`fairmiss.config.ExperimentConfig.cells`)
expands the shift into one :class:`ShiftScenario` per entry, each the missingness of its own cells, labelled
``<shift>.<test>`` (e.g. ``s.mar3``: its own row in cells.csv and metrics.json, its own MLflow child run and
cell key, whose params carry the train spec, the test spec and ``fit_group``, the shift's name). Every
scenario draws from the generator seeded by the *shift's* name (:func:`fairmiss.pipeline.make_split`): the
training draw comes first and is identical in every scenario, and each test draw continues the generator from
there, so a scenario's mask is exactly that of a one-test shift with the shift's name, its train and that test.
The cells of one (split, shift, imputer, learner) are a *fit group* (:attr:`fairmiss.config.Cell.fit_group`):
the flow keeps them in one task, which imputes and fits once and evaluates each scenario's test rows with a
copy of the fitted imputer and learner (:func:`fairmiss.pipeline.fit_evaluate`, ``fitted``). Each scenario cell
is still cached and reused on its own key, so a resumed sweep recomputes (and refits for) only what is missing.
What is shared is the fit on the training rows and, with ``evaluation.stability``, the bootstrap copies of the
learner (same rows, same seeds: fitted by the group's first scenario cell, the others only predict).
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import field_validator, model_serializer, model_validator

from fairmiss._spec import SafeLabel, _Strict
from fairmiss.missingness._base import MissingnessError
from fairmiss.missingness.compose import part_spec
from fairmiss.missingness.kinds import MISSINGNESS_KINDS
from fairmiss.missingness.mechanisms import check_mask, inject, masked_columns

__all__ = ["Shift", "ShiftScenario", "sub_spec"]


def sub_spec(d: dict, part: str):
    """Validate one side of a shift as the spec of its registered kind (a name is filled in if left out)."""
    if not isinstance(d, dict) or "kind" not in d:
        raise ValueError(f"{part}: a missingness spec with a 'kind'")
    kind = d["kind"]
    if kind == "shift":
        raise ValueError(f"{part}: a shift cannot nest another shift")
    if kind not in MISSINGNESS_KINDS:
        raise ValueError(f"{part}: unknown missingness kind '{kind}'; known: {sorted(MISSINGNESS_KINDS.kinds())}")
    spec = MISSINGNESS_KINDS[kind].spec
    d = dict(d)
    if "name" in spec.model_fields and d.get("name") is None and kind != "preset":
        d["name"] = part
    return spec.model_validate(d)


def test_specs(v) -> list:
    """``tests`` as validated specs, each named (``test<i>`` when it has no name; a preset: its preset's name);
    errors name ``tests.<i>``."""
    if not isinstance(v, list) or not v:
        raise ValueError("a non-empty list of missingness specs (one per test scenario; or give 'test')")
    out, seen = [], set()
    for i, d in enumerate(v):
        where = f"tests.{i}"
        if isinstance(d, dict) and d.get("kind") == "shift":
            raise ValueError(f"{where}: a shift cannot nest another shift")
        if isinstance(d, dict) and d.get("kind") in MISSINGNESS_KINDS and d.get("name") is None \
                and "name" in MISSINGNESS_KINDS[d["kind"]].spec.model_fields and d["kind"] != "preset":
            d = {**d, "name": f"test{i}"}
        spec = part_spec(d, where)
        label = _label(spec)
        if label in seen:
            raise ValueError(f"{where}: a second test scenario named '{label}'; test scenario names must differ")
        seen.add(label)
        out.append(spec)
    return out


def _label(spec) -> str:
    d = spec if isinstance(spec, dict) else spec.model_dump()
    return d.get("name") or d.get("preset") or d["kind"]


class ShiftScenario(_Strict):
    """One test scenario of a shift with ``tests``: the missingness of its cells (built by
    :meth:`Shift.scenarios`, not written in configs). Drawn and checked as the one-test shift ``train`` /
    ``test``, from the generator seeded by ``fit_group``."""

    kind: Literal["shift"] = "shift"
    #: ``<shift>.<test>``
    name: SafeLabel
    train: dict[str, Any]
    test: dict[str, Any]
    #: the shift's name: the missingness seed, and the fit its scenarios share
    fit_group: SafeLabel


class Shift(_Strict):
    kind: Literal["shift"] = "shift"
    name: SafeLabel
    #: the mechanism on the training rows (any registered kind but ``shift``)
    train: dict[str, Any]
    #: the mechanism on the test rows (one test scenario; or ``tests``)
    test: dict[str, Any] | None = None
    #: several test scenarios, each its own cells, sharing one imputer and learner fit per split (an entry
    #: without a name is ``test<i>``; the cells' missingness is ``<name>.<test name>``)
    tests: list[dict[str, Any]] | None = None

    @field_validator("train", "test")
    @classmethod
    def _valid_sub(cls, v, info):
        return None if v is None else sub_spec(v, info.field_name).model_dump(mode="json", by_alias=True)

    @field_validator("tests", mode="before")
    @classmethod
    def _valid_tests(cls, v):
        return None if v is None else [s.model_dump(mode="json", by_alias=True) for s in test_specs(v)]

    @model_validator(mode="after")
    def _test_or_tests(self):
        if self.test is not None and self.tests is not None:
            raise ValueError("tests: give 'test' (one test scenario) or 'tests' (several), not both")
        if self.test is None and self.tests is None:
            raise ValueError("test: missing (a required key; or give 'tests', several test scenarios)")
        self.scenarios()  # the cells' labels are valid names
        return self

    @model_serializer(mode="wrap")
    def _omit_unset(self, handler):
        # the unused one of test / tests is left out: a one-test shift dumps (and hashes) as before
        out = handler(self)
        if isinstance(out, dict):
            for k in ("test", "tests"):
                if k in out and out[k] is None:
                    del out[k]
        return out

    def scenarios(self) -> list:
        """The missingness of this shift's cells: itself (one ``test``), or one :class:`ShiftScenario` per entry
        of ``tests``."""
        if self.tests is None:
            return [self]
        try:
            return [ShiftScenario(name=f"{self.name}.{_label(t)}", train=self.train, test=t, fit_group=self.name)
                    for t in self.tests]
        except Exception as exc:  # noqa: BLE001 - a too long or otherwise invalid combined label
            raise ValueError(f"tests: the scenario labels '{self.name}.<test name>' must be valid names: "
                             f"{getattr(exc, 'errors', lambda: [{'msg': exc}])()[0]['msg']}") from None


def _tests(kw: dict) -> list:
    return [kw["test"]] if kw.get("test") is not None else list(kw.get("tests") or [])


def columns(kw: dict) -> list[str]:
    out = []
    for part, d in [("train", kw["train"])] + [("test", t) for t in _tests(kw)]:
        out += [c for c in masked_columns(sub_spec(d, part)) if c not in out]
    return out


def _rows(test_rows, n: int) -> np.ndarray:
    t = np.asarray(test_rows, dtype=bool)
    if t.shape != (n,):
        raise MissingnessError(f"shift: test_rows has shape {t.shape}, the data {n} rows")
    return t


def _one_test(kw: dict) -> None:
    if kw.get("test") is None:
        raise MissingnessError("shift with 'tests': each test scenario is drawn as its own missingness "
                               "(Shift.scenarios; the config's cells do so)")


def build(X: pd.DataFrame, kw: dict, *, group, rng: np.random.Generator, label, test_rows, raw=None):
    _one_test(kw)
    t = _rows(test_rows, len(X))
    group, label = np.asarray(group), np.asarray(label)
    M = np.zeros(X.shape, dtype=bool)
    for part, sel in (("train", ~t), ("test", t)):
        if not sel.any():
            continue
        _, m = inject(X.iloc[sel], sub_spec(kw[part], part), group=group[sel], rng=rng, label=label[sel],
                      test_rows=np.zeros(int(sel.sum()), dtype=bool), raw=raw.take(sel) if raw is not None else None)
        M[np.flatnonzero(sel)] = m.to_numpy(dtype=bool)  # positional: the index may repeat labels
    mask = pd.DataFrame(M, index=X.index, columns=X.columns)
    masked = X.copy()
    for j, c in enumerate(X.columns):
        if M[:, j].any():
            masked[c] = masked[c].astype("float64").mask(M[:, j])
    return masked, mask


def check(mask: pd.DataFrame, kw: dict, group, *, label, test_rows, original, masked, raw=None) -> list[str]:
    _one_test(kw)
    t = _rows(test_rows, len(mask))
    group, label = np.asarray(group), np.asarray(label)
    problems = []
    for part, sel in (("train", ~t), ("test", t)):
        if sel.any():
            problems += [f"{part} rows: {p}" for p in check_mask(
                mask.iloc[sel], sub_spec(kw[part], part), group[sel], original=original.iloc[sel],
                masked=masked.iloc[sel], label=label[sel], test_rows=np.zeros(int(sel.sum()), dtype=bool),
                raw=raw.take(sel) if raw is not None else None)]
    return problems


MISSINGNESS_KINDS.register("shift", Shift, build, check=check, columns=columns,
                           needs=("label", "test_rows", "original", "masked", "raw"))
