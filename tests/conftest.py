"""Shared test fixtures.

Real public data lives outside the repository in ``../shared/data`` (``PRMKIT_SHARED_DATA``
overrides the path). Tests that need it take the ``shared_data`` fixture and are skipped, with the
reason, where it is absent (a user's fresh clone); CI always has it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def shared_data_dir() -> Path:
    return Path(os.environ.get("PRMKIT_SHARED_DATA", REPO.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    path = shared_data_dir()
    if not path.is_dir():
        pytest.skip(f"real data not found at {path} (set PRMKIT_SHARED_DATA to run these tests)")
    return path
