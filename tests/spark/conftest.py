"""A real local Spark (``local[2]``, as on this 2-core machine) shared by the pipeline's Spark tests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from migrate.pipeline.session import spark_session


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    session = spark_session("local[2]", {"spark.sql.shuffle.partitions": "4", "spark.driver.memory": "1g"})
    try:
        yield session
    finally:
        session.stop()
