"""The normal user that the sandbox tests run a sandbox as (see `tests.support.nonroot`)."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from tests.support.nonroot import NonRoot, non_root


@pytest.fixture(scope="session")
def nonroot() -> NonRoot | str:
    """A normal user to run the sandbox as, or why there is none."""
    workdir = tempfile.mkdtemp(prefix="sweetflow-nonroot-")  # readable by that user, unlike pytest's tmp_path
    os.chmod(workdir, 0o755)
    yield non_root(Path(workdir))
    shutil.rmtree(workdir)
