"""Test-suite settings: CI runs hypothesis derandomized so that ``main`` stays reproducible;
the Dask tests' cluster."""

import os

import pytest
from hypothesis import settings

settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


@pytest.fixture(scope="module")
def client():
    """A LocalCluster of 2 worker processes of one thread, and its client (per module)."""
    import distributed

    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        yield client
