"""Datasets: acquisition, registry, builders and the validation gate."""

from fairmiss.datasets.acquire import ChecksumError, RawDataMissingError, RawFile, fetch
from fairmiss.datasets.registry import (
    DatasetError,
    DatasetVariant,
    dataset_names,
    get_variant,
    list_variants,
    register,
)

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
