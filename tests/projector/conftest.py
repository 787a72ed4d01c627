"""Fixtures for projector tests: a data directory per test and a projector factory."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from projector._projector import Projector


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def make_projector(
    redis_client: aioredis.Redis, job: str, data_dir: Path
) -> Callable[..., Projector]:
    """``make_projector(commit_events=...)``: a projector of the test's job (not yet entered)."""

    def make(**options: float | int | None) -> Projector:
        return Projector(redis_client, job, data_dir, **options)  # type: ignore[arg-type]

    return make
