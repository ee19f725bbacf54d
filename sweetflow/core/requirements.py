"""The versions of its dependencies the code needs, checked when a module that needs them is imported
(the agent's generation, the shared-prefix log-probs, the CLI).

An older release does not always fail: transformers before 5.24 takes generation's `cache=` as an
unknown keyword and decodes without the cache, returning wrong tokens. So those modules refuse to load,
in one line, instead of running on it. pyproject.toml declares the same minimums (a test holds the two
together).
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Callable

from packaging.version import Version

# name -> (the oldest release that has what the code uses, what that is)
MINIMUMS = {
    "transformers": ("5.24", "generation's cache= argument and a forward pass's out.cache"),
}


class TooOld(SystemExit):
    """An installed dependency older than the code needs: the process exits with this one line."""


def check(installed: Callable[[str], str] = importlib.metadata.version) -> None:
    for name, (minimum, uses) in MINIMUMS.items():
        try:
            found = installed(name)
        except importlib.metadata.PackageNotFoundError:
            continue  # not installed at all: its own import fails, naming it
        if Version(found) < Version(minimum):
            raise TooOld(
                f"sweetflow needs {name}>={minimum} (it uses {uses}); {found} is installed: "
                f"pip install '{name}>={minimum}'"
            )
