"""Reading and validating config files: the duplicate-key-refusing YAML loader (:func:`read_yaml`),
validation-error formatting, :func:`parse_config` / :func:`load_config` (with ``--quick`` overrides)
and :func:`load_study_config`.
"""

from __future__ import annotations

from pathlib import Path
import yaml
from pydantic import ValidationError

from fairmiss._errors import ConfigError
from fairmiss.config.experiment import DatasetSpec, ExperimentConfig, missingness_label
from fairmiss.config.studies import STUDIES

__all__ = ["check_columns", "check_dataset_spec", "load_config", "load_study_config", "parse_config", "read_yaml"]


# --------------------------------------------------------------------------- reading YAML files
#: limits of a config file: bytes, aliases (``*name``), nesting depth. A real config is a few KB, uses a handful of
#: aliases and nests 5-6 levels; past these a file is a mistake or an attack (an alias "bomb" expands
#: exponentially, deep nesting exhausts Python's recursion), refused before anything reads its values.
YAML_MAX_BYTES, YAML_MAX_ALIASES, YAML_MAX_DEPTH = 1 << 20, 100, 50
#: values in the document once every alias is expanded (what validating it would build)
YAML_MAX_NODES = 100_000


class _UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML's safe loader, but a mapping that repeats a key is an error (PyYAML keeps the last one
    silently: ``learners:`` twice would drop the first list), and aliases and nesting are bounded
    (:data:`YAML_MAX_ALIASES`, :data:`YAML_MAX_DEPTH`)."""

    _aliases = 0
    _depth = 0

    def compose_document(self):
        node = super().compose_document()
        sizes: dict[int, int] = {}

        def expanded(n) -> int:  # shared (aliased) nodes counted once per use, each computed once
            if sizes.get(id(n)) == -1:
                raise yaml.composer.ComposerError(None, None, "an alias refers to a value that contains it",
                                                  n.start_mark)
            if id(n) not in sizes:
                sizes[id(n)] = -1  # being counted
                kids = [x for pair in n.value for x in pair] if isinstance(n, yaml.MappingNode) else \
                    n.value if isinstance(n, yaml.SequenceNode) else []
                sizes[id(n)] = 1 + sum(expanded(k) for k in kids)
            return sizes[id(n)]

        if node is not None and expanded(node) > YAML_MAX_NODES:
            raise yaml.composer.ComposerError(None, None, f"its aliases expand to more than {YAML_MAX_NODES:,} "
                                              "values (an alias bomb?)", node.start_mark)
        return node

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            self._aliases += 1
            if self._aliases > YAML_MAX_ALIASES:
                raise yaml.composer.ComposerError(None, None, f"more than {YAML_MAX_ALIASES} aliases (*name)",
                                                  self.peek_event().start_mark)
        self._depth += 1
        try:
            if self._depth > YAML_MAX_DEPTH:
                raise yaml.composer.ComposerError(None, None, f"nested more than {YAML_MAX_DEPTH} levels deep",
                                                  self.peek_event().start_mark)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen: dict = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    first = seen.get(key)
                except TypeError:  # unhashable key: let PyYAML report it
                    continue
                if first is not None:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"duplicate key {key!r} (first at line {first.line + 1})", key_node.start_mark)
                seen[key] = key_node.start_mark
        return super().construct_mapping(node, deep=deep)


def _yaml_problem(exc: yaml.YAMLError) -> str:
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        what = " ".join(x for x in (exc.context, exc.problem) if x)
        return f"{where}{what}"
    return " ".join(str(exc).split())


def read_yaml(path: str | Path, what: str = "config file"):
    """Parse a YAML file with one :class:`ConfigError` (one line naming the file) for every way it can be
    unusable: missing, a directory, unreadable, not UTF-8 (e.g. Latin-1 or UTF-16), not valid YAML, or a
    mapping that repeats a key (line and key named)."""
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"{path}: {what} not found")
    if path.is_dir():
        raise ConfigError(f"{path}: is a directory, not a {what}")
    if not path.is_file():
        raise ConfigError(f"{path}: is not a regular file (a device, FIFO or socket), not a {what}")
    try:
        size = path.stat().st_size
        if size > YAML_MAX_BYTES:
            raise ConfigError(f"{path}: the {what} is {size:,} bytes, more than {YAML_MAX_BYTES:,}; a config is "
                              "a few KB of YAML")
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the {what}: {exc.strerror or exc}") from None
    if raw[:2] in (b"\xff\xfe", b"\xfe\xff") or b"\x00" in raw:
        raise ConfigError(f"{path}: the {what} is not UTF-8 text (it looks like UTF-16); save it as UTF-8")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ConfigError(f"{path}: the {what} is not UTF-8 text (byte 0x{raw[exc.start]:02x} on line {line}, "
                          "e.g. Latin-1); save it as UTF-8") from None
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {_yaml_problem(exc)}") from None


def load_study_config(path: str | Path, *, quick: bool = False):
    """An experiment config, or a special study config when the file has a ``study:`` key."""
    path = Path(path)
    data = read_yaml(path)
    if isinstance(data, dict) and "study" in data:
        source = path
        if quick and data.get("quick"):  # a study without overrides keeps its name (and its outputs' path)
            data, source = _apply_quick(data, path)
        study = data.get("study")
        if not isinstance(study, str) or study not in STUDIES:
            raise ConfigError(f"{path}: invalid config: study: unknown study {study!r}; known: "
                              f"{', '.join(STUDIES.kinds())}")
        _check_int_sizes(data, source)
        try:
            cfg = STUDIES[study].build(data)
        except ValidationError as exc:
            raise ConfigError(_format_errors(source, exc)) from None
        if getattr(cfg, "dataset", None) is not None:
            check_dataset_spec(cfg.dataset, source)
        return cfg
    return load_config(path, quick=quick)


def _apply_quick(data: dict, path: Path) -> tuple[dict, str | Path]:
    """``data`` with its ``quick:`` overrides merged in and ``-quick`` appended to the experiment name, and the
    source errors then name: ``FILE (with its quick: overrides)`` when there are overrides, so that a bad
    override is not reported as a bad key of the full config."""
    over = data.get("quick") or {}
    if not isinstance(over, dict):
        raise ConfigError(f"{path}: quick: must be a mapping of overrides, got {type(over).__name__}")
    data = _deep_merge(data, over)
    data["experiment"] = f"{data.get('experiment', 'x')}-quick"
    return data, (f"{path} (with its quick: overrides)" if over else path)


def _format_errors(path: Path | str, exc: ValidationError) -> str:
    """``FILE: invalid config: KEY: problem`` for one error; for several, one line per error below
    ``FILE: invalid config (N errors):``, each naming its key. Messages are never cut (only the echoed
    input, ``got …``, is shortened)."""
    items = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"])
        if err["type"] == "extra_forbidden":
            items.append(f"unknown key '{loc}'")
        elif err["type"] == "missing":  # the input pydantic echoes is the enclosing mapping: not worth a line
            items.append(f"{loc or '<root>'}: missing (a required key)")
        elif err["type"] == "bool_not_number":  # raised for the whole mapping (fairmiss._spec): the key is in ctx
            ctx = err.get("ctx") or {}
            key = ".".join(x for x in (loc, str(ctx.get("key", ""))) if x)
            items.append(f"{key}: Input should be {ctx.get('expected', 'a number')}, not true or false "
                         f"(got {ctx.get('value')!r})")
        else:
            msg = " ".join(str(err["msg"]).split())
            if err["type"] == "value_error":  # our own validators' messages: pydantic prefixes "Value error, "
                msg = msg.removeprefix("Value error, ")
            if not loc:  # a check across the whole file: the input echoed would be all of it
                items.append(f"<root>: {msg}")
                continue
            got = " ".join(repr(err.get("input")).split())
            got = got if len(got) <= 120 else got[:117] + "..."
            items.append(f"{loc}: {msg} (got {got})")
    if len(items) == 1:
        return f"{path}: invalid config: {items[0]}"
    return f"{path}: invalid config ({len(items)} errors):\n" + "\n".join(f"  {it}" for it in items)


#: missingness fields keyed by group or label codes, per level of keys (``None``: a column name). The data's own
#: names are accepted there too (``rates: {income: {north: 0.1, south: 0.4}}``) and stored as the codes, so a
#: config written with names and the same config written with codes are one config (one hash, the same cells).
#: A key is a name when it is a string, a code when it is an integer (YAML's ``1:``, not ``"1":``).
CODED_KEYS = {"mcar_group": {"rates": (None, "group")}, "mcar_block": {"rates_by_group": ("group",)},
              "label_driven": {"rates_by_label": ("label",), "rates_by_group_label": ("group", "label")}}


def _names_to_codes(data: dict, source) -> dict:
    """``data`` with the group and label names of :data:`CODED_KEYS` fields replaced by their codes (a name
    that is not one of the dataset's: a :class:`ConfigError` listing them). Left as it is when the dataset
    part is itself invalid: the full validation then reports that."""
    miss, ds = data.get("missingness"), data.get("dataset")
    if not (isinstance(miss, list) and isinstance(ds, dict)
            and any(isinstance(m, dict) and m.get("kind") in CODED_KEYS for m in miss)):
        return data
    try:
        spec = DatasetSpec.model_validate(ds)
        check_dataset_spec(spec, source)
        from fairmiss.datasets import get_variant

        v = get_variant(spec.name)
    except Exception:  # noqa: BLE001 — the full validation below names what is wrong with the dataset
        return data
    known = {"group": v.group_encoding, "label": v.label_encoding}

    def recode(value, levels, where):
        if not levels or not isinstance(value, dict):
            return value
        what, out = levels[0], {}
        for k, sub in value.items():
            if what is not None and isinstance(k, str):
                codes = {str(name): int(code) for code, name in known[what].items()}
                if k not in codes:
                    listed = ", ".join(f"{code} = {name}" for code, name in sorted(known[what].items()))
                    raise ConfigError(f"{source}: {where}: '{k}' is not a {what} of dataset {v.name}; its "
                                      f"{what}s (code = name; either may be used): {listed}")
                k = codes[k]
            out[k] = recode(sub, levels[1:], f"{where}.{k}")
        return out

    recoded = []
    for i, m in enumerate(miss):
        fields = CODED_KEYS.get(m.get("kind")) if isinstance(m, dict) else None
        if fields:
            m = {**m, **{f: recode(m[f], levels, f"missingness.{i}.{f}") for f, levels in fields.items() if f in m}}
        recoded.append(m)
    return {**data, "missingness": recoded}


def parse_config(data: dict, source: str | Path = "<dict>") -> ExperimentConfig:
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: top level must be a mapping, got {type(data).__name__}")
    _check_int_sizes(data, source)
    data = _names_to_codes(data, source)
    try:
        cfg = ExperimentConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_format_errors(source, exc)) from None
    from fairmiss.missingness.mechanisms import PRESETS

    for i, m in enumerate(cfg.missingness):
        if m.kind == "preset" and m.preset not in PRESETS:
            raise ConfigError(f"{source}: missingness.{i}.preset: unknown preset '{m.preset}'; known: {sorted(PRESETS)}")
        if m.kind == "preset" and "kind" in PRESETS[m.preset] and m.mode != "bernoulli":
            raise ConfigError(f"{source}: missingness.{i}.mode: preset '{m.preset}' is a {PRESETS[m.preset]['kind']} "
                              "spec; mode applies to the paper-000 presets only")
    check_dataset_spec(cfg.dataset, source)
    cfg = privileged_to_code(cfg, source)
    check_columns(cfg, source)
    check_two_group_learners(cfg, source)
    return cfg


def privileged_to_code(cfg: ExperimentConfig, source: str | Path = "<dict>") -> ExperimentConfig:
    """``dataset.privileged`` given by name or code, stored as the group's code (both spellings are one config,
    one hash); a value that is neither a :class:`ConfigError` listing the dataset's groups."""
    p = cfg.dataset.privileged
    if p is None:
        return cfg
    from fairmiss.datasets import get_variant

    v = get_variant(cfg.dataset.name)
    groups = v.group_encoding or {}
    by_name = {str(name): int(code) for code, name in groups.items()}
    code = int(p) if isinstance(p, int) and p in groups else by_name.get(str(p))
    if code is None and isinstance(p, str) and p.lstrip("-").isdigit() and int(p) in groups:
        code = int(p)
    if code is None:
        listed = ", ".join(f"{c} = {n}" for c, n in sorted(groups.items()))
        raise ConfigError(f"{source}: dataset.privileged: {p!r} is not a group of dataset {v.name}; its groups "
                          f"(code = name; either may be used): {listed}")
    return cfg.model_copy(update={"dataset": cfg.dataset.model_copy(update={"privileged": code})})


def check_two_group_learners(cfg: ExperimentConfig, source: str | Path = "<dict>") -> None:
    """Learners defined for two groups (registered with ``two_groups=True``: the Fair MIP Forest's regulariser)
    are refused when the dataset registry knows more groups (intersectional ``dataset.group``, an own file's
    ``group_names``), naming ``learners.N``, the groups and the fix; before any data are read."""
    from fairmiss.datasets import get_variant
    from fairmiss.learners.adapter import LEARNER_KINDS

    groups = get_variant(cfg.dataset.name).group_encoding or {}
    two = LEARNER_KINDS.with_flag("two_groups")
    for i, ln in enumerate(cfg.learners):
        if ln.kind in two and len(groups) > 2:
            names = ", ".join(str(n) for _, n in sorted(groups.items()))
            raise ConfigError(f"{source}: learners.{i}: {ln.label} is defined for two groups ({ln.kind}), but "
                              f"dataset {cfg.dataset.name} has {len(groups)} groups ({names}); give it a dataset "
                              "with one two-valued group column, or use another learner")


def _check_int_sizes(value, source, key: str = "") -> None:
    """An integer that does not fit 64 bits (``max_depth: 1000000000000000000000000000000``) is a config error
    naming its key: every value reaches numpy or a C library, where it would fail in every cell instead."""
    if isinstance(value, dict):
        for k, v in value.items():
            _check_int_sizes(v, source, f"{key}.{k}" if key else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _check_int_sizes(v, source, f"{key}.{i}")
    elif isinstance(value, int) and not isinstance(value, bool) and not -2**63 <= value < 2**63:
        raise ConfigError(f"{source}: {key}: {value} does not fit a 64-bit integer")


def check_dataset_spec(spec: DatasetSpec, source: str | Path = "<dict>") -> None:
    """``dataset.name`` is a registered variant and ``dataset.options`` are its options with the types of
    their defaults (:meth:`fairmiss.datasets.registry.DatasetVariant.option_problems`)."""
    from fairmiss.datasets import dataset_names
    from fairmiss.datasets import get_variant
    if spec.file is not None:  # own data: read and check the file now (DatasetError names file, line, column)
        from fairmiss.datasets.own import ensure_registered

        ensure_registered(spec)  # a URL is fetched into the raw directory (verified against sha256 if given)
        return
    base = spec.name.partition(".")[0]
    if base not in dataset_names():
        raise ConfigError(f"{source}: dataset.name: unknown dataset '{base}'; known: {', '.join(dataset_names())}")
    if base != spec.name:  # other groups of a registered dataset (dataset.group)
        from fairmiss.datasets.registry import GROUP_JOIN, regroup_problem

        problem = regroup_problem(get_variant(base), spec.name.partition(".")[2].split(GROUP_JOIN))
        if problem is not None:
            raise ConfigError(f"{source}: dataset.{problem}")
    problems = get_variant(spec.name).option_problems(spec.options)
    if problems:
        raise ConfigError(f"{source}: " + "; ".join(f"dataset.options.{k}: {msg}" for k, msg in problems))


def check_columns(cfg: ExperimentConfig, source: str | Path = "<dict>") -> None:
    """Every column a config names exists in the dataset variant's declared columns, before any data are
    read: masked and driver columns of missingness specs (features only; never the group or the label),
    ``extra_groups`` (columns of the processed table other than the group), the ``protected`` columns of
    BuDRO / Project / Reweigh and the ``consistency`` columns (features). A raw attribute of the variant's
    ``raw_coding`` stands for its columns (a one-hot block, a coded column); a condition may also read the
    columns kept beside the features (and the group, when the coding names it)."""
    from fairmiss.datasets import get_variant
    from fairmiss.missingness.mechanisms import masked_columns, read_columns

    v = get_variant(cfg.dataset.name)
    features = list(v.features) + ([v.group] if cfg.dataset.group_as_feature else [])
    role = {v.group: "the dataset's group", v.label: "the dataset's label"}

    def fail(key: str, msg: str):
        raise ConfigError(f"{source}: {key}: {msg}")

    coding = getattr(v, "raw_coding", None) or {}
    role.update({c: "a protected attribute kept beside the features" for c in getattr(v, "kept", [])})
    coded_group = any(how.get("column") == v.group for how in coding.values())
    readable = [*features, *(c for c in getattr(v, "kept", []) if c not in features),
                *([v.group] if coded_group and v.group not in features else [])]

    def table(cols) -> list[str]:  # raw attributes of the variant's raw coding as the table's columns
        out = []
        for c in cols:
            how = coding.get(c)
            out += list(how["onehot"].values()) if how and "onehot" in how else [how.get("column", c) if how else c]
        return out

    def need_features(key: str, cols, what: str = "column", allowed=None):
        allowed = features if allowed is None else allowed
        for c in cols:
            if c not in allowed:
                extra = f" ({role[c]})" if c in role else ""
                fail(key, f"{what} '{c}' is not a feature of dataset {v.name}{extra}; features: {allowed}")

    for i, m in enumerate(cfg.missingness):
        key = f"missingness.{i} ('{missingness_label(m)}')"
        cols = masked_columns(m)
        for c in cols:
            if c in role:
                never = "the group and the label are never masked" if c in (v.group, v.label) else "never masked"
                fail(key, f"it would mask '{c}', {role[c]}; {never}")
        need_features(key, table(cols))
        for c in read_columns(m):
            if c == v.group and c not in features and c not in coding:
                fail(f"{key}.condition.column", f"'{c}' is the dataset's group; condition on it with column: group "
                     "(its codes)")
        need_features(f"{key}.condition.column", table(read_columns(m)), "condition column", readable)
        if m.kind == "mar":
            need_features(key + ".drivers", m.drivers, "driver column")
        group_codes = {int(k) for k in (v.group_encoding or {})}
        by_group = {f"rates.{c}": r for c, r in m.rates.items()} if m.kind == "mcar_group" else \
            {"rates_by_group_label": m.rates_by_group_label} if getattr(m, "rates_by_group_label", None) else {}
        for sub, rates in by_group.items():
            ghost = sorted(set(rates) - group_codes) if group_codes else []
            if ghost:
                names = ", ".join(f"{k} = {n}" for k, n in sorted((v.group_encoding or {}).items()))
                fail(f"{key}.{sub}", f"group {ghost[0]} is not a group of dataset {v.name} (groups: {names})")
        if m.kind == "ampute":
            for j, pat in enumerate(m.patterns):
                need_features(f"{key}.patterns.{j}.weights", list(pat.weights or {}))
    for i, col in enumerate(cfg.extra_groups):
        if col == v.group:
            fail(f"extra_groups.{i}", f"'{col}' is the dataset's group already")
        if col not in v.columns:
            fail(f"extra_groups.{i}", f"'{col}' is not a column of dataset {v.name}; columns: {v.columns}")
    for i, ln in enumerate(cfg.learners):
        if getattr(ln, "protected", None):
            need_features(f"learners.{i}.{ln.kind}.protected", ln.protected, "protected column")
    for name, cols in cfg.consistency.items():
        need_features(f"consistency.{name}", cols)


def _deep_merge(base: dict, over: dict) -> dict:
    out = dict(base)
    for k, v in over.items():
        out[k] = _deep_merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def load_config(path: str | Path, *, quick: bool = False) -> ExperimentConfig:
    """Load and validate a config; ``quick=True`` applies its ``quick:`` overrides (a small version)."""
    path = Path(path)
    data = read_yaml(path)
    source = path
    if quick and isinstance(data, dict):
        data, source = _apply_quick(data, path)
    return parse_config(data, source)
