"""SWEET-RL and the ColBench benchmark as a reproducible pipeline."""

from sweetflow.requirements import check as _check_versions

_check_versions()
