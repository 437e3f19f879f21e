"""scikit-learn-compatible estimators named by import path in a config (a leaf module): ``kind: estimator``
learners (:mod:`fairmiss.learners.estimator`) and imputers (:mod:`fairmiss.impute.estimator`).

Only the path the user wrote is imported: it must be a dotted path of plain identifiers
(``package.module.ClassName``, no dunder part, no call, no attribute chain), its module part is imported with
:func:`importlib.import_module` and the last part is looked up as a class of that module — nothing else is
evaluated, and nothing is ever imported from data files. Each check raises ``ValueError`` with a message that
says what is wrong (pydantic turns it into a validation error naming the config key).
"""

from __future__ import annotations

import difflib
import importlib
import inspect
import re

__all__ = ["resolve_class", "constructor_params", "check_params", "check_estimator_class", "make_instance", "check_values", "tags"]

_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
_PATH = re.compile(rf"{_IDENT}(?:\.{_IDENT})+")


def resolve_class(path: str) -> type:
    """The class named by the dotted import path ``path`` (``module.sub.ClassName``)."""
    if not isinstance(path, str) or not _PATH.fullmatch(path):
        raise ValueError(f"{path!r} is not a dotted import path 'package.module.ClassName' "
                         "(identifiers separated by single dots, e.g. sklearn.ensemble.GradientBoostingClassifier)")
    parts = path.split(".")
    if any(p.startswith("__") for p in parts):
        raise ValueError(f"{path!r}: dunder names are not allowed in an import path")
    module_name, attr = ".".join(parts[:-1]), parts[-1]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise ValueError(f"{path!r}: no module named {exc.name!r} (is the package installed?)") from None
    except Exception as exc:  # noqa: BLE001 - a module that fails to import is a user-facing config error
        raise ValueError(f"{path!r}: importing module {module_name!r} failed: {type(exc).__name__}: {exc}") from None
    try:  # one attribute of the module (a module-level __getattr__ counts: lazily loaded packages)
        cls = vars(module)[attr] if attr in vars(module) else getattr(module, attr)
    except Exception as exc:  # noqa: BLE001 - AttributeError, or a lazy loader's ImportError
        if not isinstance(exc, AttributeError):
            raise ValueError(f"{path!r}: {type(exc).__name__}: {' '.join(str(exc).split())}") from None
        public = [n for n, v in vars(module).items() if inspect.isclass(v) and not n.startswith("_")]
        close = difflib.get_close_matches(attr, public, n=3)
        hint = f"; did you mean {', '.join(f'{module_name}.{c}' for c in close)}?" if close else ""
        raise ValueError(f"{path!r}: module {module_name!r} has no attribute {attr!r}{hint}") from None
    if not inspect.isclass(cls):
        raise ValueError(f"{path!r} is a {type(cls).__name__}, not a class (an estimator class is expected)")
    return cls


def constructor_params(cls: type) -> tuple[set[str], bool]:
    """The keyword parameters ``cls(...)`` takes and whether it takes ``**kwargs``."""
    try:
        sig = inspect.signature(cls.__init__)
    except (TypeError, ValueError):
        return set(), True
    names, var_kw = set(), False
    for name, p in sig.parameters.items():
        if name == "self" or p.kind is p.VAR_POSITIONAL:
            continue
        if p.kind is p.VAR_KEYWORD:
            var_kw = True
        elif p.kind is not p.POSITIONAL_ONLY:
            names.add(name)
    return names, var_kw


def check_params(cls: type, params: dict) -> None:
    """Every key of ``params`` is a constructor parameter of ``cls`` (message: ``params.KEY: ...``)."""
    names, var_kw = constructor_params(cls)
    if var_kw:
        return
    for key in params:
        if key not in names:
            close = difflib.get_close_matches(str(key), sorted(names), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ValueError(f"params.{key}: {cls.__name__} takes no parameter {key!r}{hint}; "
                             f"its parameters: {', '.join(sorted(names)) or 'none'}")


def check_estimator_class(cls: type, path: str, *, methods: tuple[str, ...]) -> None:
    """``cls`` is a scikit-learn-style estimator: ``get_params``, ``set_params`` and ``methods``."""
    missing = [m for m in ("get_params", "fit", *methods) if not callable(getattr(cls, m, None))]
    if missing:
        raise ValueError(f"{path!r} is not a scikit-learn estimator: class {cls.__name__} has no "
                         f"{', '.join(missing)} method")


def make_instance(cls: type, params: dict, **defaults):
    """``cls(**params)``, adding each of ``defaults`` (e.g. ``random_state=seed``) the constructor takes and
    ``params`` does not set."""
    names, _ = constructor_params(cls)
    kw = dict(params)
    for k, v in defaults.items():
        if k in names and k not in kw:
            kw[k] = v
    return cls(**kw)


def tags(instance):
    """scikit-learn's tags of ``instance`` (:func:`sklearn.utils.get_tags`), or ``None`` if it has none."""
    from sklearn.utils import get_tags

    try:
        return get_tags(instance)
    except Exception:  # noqa: BLE001 - not a scikit-learn estimator: no tags, the caller falls back
        return None


def check_values(instance) -> None:
    """The parameter values of a scikit-learn estimator against its declared constraints (scikit-learn checks
    them only at ``fit``; this runs the same check at config time). Estimators without declared constraints
    pass."""
    validate = getattr(instance, "_validate_params", None)
    if validate is None or not getattr(instance, "_parameter_constraints", None):
        return
    try:
        validate()
    except (ValueError, TypeError) as exc:
        raise ValueError(f"params: {' '.join(str(exc).split())}") from None
