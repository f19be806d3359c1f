"""Shared fixtures: warehouse roots on local disk, memory:// and S3 (moto on 127.0.0.1)."""

from __future__ import annotations

import socket
import uuid
from collections.abc import Iterator
from typing import Any

import fsspec
import pytest

from requirements import check_marks


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "needs(need, present, reason): skip unless present, fail instead when CI requires "
        "the need (tests/requirements.py)",
    )


def pytest_runtest_setup(item: pytest.Item) -> None:
    check_marks(item)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    """A real S3 endpoint: moto's server, on 127.0.0.1 only."""
    from moto.server import ThreadedMotoServer

    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


@pytest.fixture
def s3_options(s3_endpoint: str) -> dict[str, Any]:
    """storage_options for s3fs against the moto server (instance cache off)."""
    return {
        "key": "testing",
        "secret": "testing",
        "client_kwargs": {"endpoint_url": s3_endpoint, "region_name": "us-east-1"},
        "skip_instance_cache": True,
        "use_listings_cache": False,
    }


@pytest.fixture
def s3_root(s3_endpoint: str, s3_options: dict[str, Any]) -> str:
    """A fresh bucket per test; returns ``s3://bucket/warehouse``."""
    import boto3

    bucket = f"cellstore-{uuid.uuid4().hex[:12]}"
    client = boto3.client(
        "s3",
        endpoint_url=s3_endpoint,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        region_name="us-east-1",
    )
    client.create_bucket(Bucket=bucket)
    return f"s3://{bucket}/warehouse"


@pytest.fixture
def memory_root() -> Iterator[str]:
    """A unique memory:// root, removed afterwards (the memory store is process-global)."""
    root = f"memory://cellstore-test-{uuid.uuid4().hex}"
    yield root
    fs = fsspec.filesystem("memory")
    path = fs._strip_protocol(root)
    if fs.exists(path):
        fs.rm(path, recursive=True)


@pytest.fixture(params=["local", "memory"])
def any_root(request: pytest.FixtureRequest, tmp_path: Any) -> str:
    """Each embedded backend in turn: local disk and memory://."""
    if request.param == "local":
        return str(tmp_path / "wh")
    root: str = request.getfixturevalue("memory_root")
    return root
