"""A domain's parts, imported by name: `sweetflow.<domain>.<part>`.

Code outside the domain packages never names a domain: it asks a loader for the part it needs of the
domain a stage runs (`get_domain`, `get_domain_report`, `task_builder`, `domain_instructions`), and
each loader imports that part here. A stage of one domain then loads only that domain's code, which
is what its dvc.yaml dependencies (`sweetflow/<domain>`) cover; `sweetflow.dag` follows the loaders
to check them.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from sweetflow.core.params import DOMAINS


def domain_module(name: str, part: str) -> ModuleType:
    """`sweetflow.<name>.<part>`, for a domain `name` of DOMAINS."""
    if name not in DOMAINS:
        raise ValueError(f"unknown domain {name!r}; expected one of {list(DOMAINS)}")
    return importlib.import_module(f"sweetflow.{name}.{part}")
