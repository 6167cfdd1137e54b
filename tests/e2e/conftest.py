"""Fixtures of the end-to-end tests; the helpers are in the e2e_lib package (see its docstring)."""
import pytest

from e2e_lib import Cluster


@pytest.fixture(scope="module")
def make_cluster(request):
    """make_cluster(label, count) -> a started Cluster, torn down (down --purge) after the module."""
    made = []

    def make(label, count=3):
        cluster = Cluster(label, count)
        made.append(cluster)
        cluster.up()
        return cluster

    yield make
    errors = []
    for cluster in made:
        try:
            cluster.teardown()
        except Exception as e:  # noqa: BLE001 - tear every cluster down, report all
            errors.append(str(e))
    if errors:
        pytest.fail("\n".join(errors))
