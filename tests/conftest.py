import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # test helpers (dag_views, fixtures_*) import by name

if os.environ.get("PYTEST_XDIST_WORKER"):
    # Two workers share the machine's cores: a second thread gains a tiny model nothing, and two processes' OpenMP
    # threads busy-waiting on the same cores slow both. Set before torch is imported; every job inherits it.
    os.environ.setdefault("OMP_NUM_THREADS", "1")


# The longest files, longest first (pytest --durations): pytest-xdist hands whole files to its workers in the
# collection's order, the next one to a worker once two or fewer of its tests are left to run.
LONGEST_FIRST = ("test_pipeline.py", "test_paper_pipeline.py", "test_user_data_pipeline.py", "test_resume.py",
                 "test_released_pipeline.py", "test_ddp.py")


def pytest_collection_modifyitems(items):
    """Those files first, then files with some slow tests, then the rest (`make test` keeps this order with
    --no-loadscope-reorder), so no long run starts last and leaves one worker running it alone."""
    slow_in_file: dict[Path, bool] = {}
    for item in items:
        slow_in_file[item.path] = slow_in_file.get(item.path, False) or item.get_closest_marker("slow") is not None

    def rank(item) -> tuple[int, int]:
        name = item.path.name
        if name in LONGEST_FIRST:
            return 0, LONGEST_FIRST.index(name)
        return (1 if slow_in_file[item.path] else 2), 0

    items.sort(key=rank)  # stable: a file's tests keep their order


@pytest.fixture(scope="session")
def english_documents() -> list[str]:
    """Real English prose that an installed package ships: scikit-learn's data set descriptions."""
    import sklearn.datasets

    folder = Path(sklearn.datasets.__file__).parent / "descr"
    return [path.read_text(encoding="utf-8") for path in sorted(folder.glob("*.rst"))]
