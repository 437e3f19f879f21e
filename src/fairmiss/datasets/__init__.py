"""Datasets: acquisition, registry, builders and the validation gate."""

from fairmiss.datasets.acquire import ChecksumError, RawDataMissingError, RawFile, fetch
from fairmiss.datasets.registry import DatasetError, DatasetVariant, lookup, register, registered

# Every dataset module registers itself on import; all modules of this package are imported here, eagerly
# and without a guard: a broken dataset module is an error at import, never a silently "unknown dataset"
# (the registry is a leaf that imports no dataset, so this forms no import cycle). Adding a dataset is one
# module (+ its test).
from fairmiss._registry import discover as _discover  # noqa: E402

DATASET_MODULES = _discover("fairmiss.datasets", skip=("acquire", "csvcheck", "prepare", "registry", "validate"),
                            entry_point_group="fairmiss.datasets")


def get_variant(name: str) -> DatasetVariant:
    """The dataset variant ``name`` (built-in or registered by the user); KeyError names the known ones."""
    return lookup(name)


def list_variants() -> list[DatasetVariant]:
    return registered()


def dataset_names() -> list[str]:
    return [v.name for v in registered()]


__all__ = [
    "ChecksumError",
    "DatasetError",
    "DatasetVariant",
    "RawDataMissingError",
    "RawFile",
    "dataset_names",
    "fetch",
    "get_variant",
    "list_variants",
    "load_dataset",
    "register",
]


def load_dataset(name: str, raw_dir=None, **options):
    """Build the processed table of dataset variant ``name`` (no validation, no caching)."""
    df, _ = get_variant(name).build(raw_dir, **options)
    return df
