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
    """A LocalCluster of 2 worker processes of one thread, and its client (per module).

    The tests kill workers; their nannies start new ones, which must register within Dask's
    ``lost-worker-timeout`` (15 s by default) or the cluster closes the nanny for good, and
    a slow machine's new worker (importing numba, loading kernels) took longer: the
    module's later tests then ran on one worker."""
    import dask
    import distributed

    with dask.config.set({"distributed.deploy.lost-worker-timeout": "180s"}), \
            distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                     dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        yield client
