import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # test helpers (dag_views, fixtures_*) import by name


@pytest.fixture(scope="session")
def english_documents() -> list[str]:
    """Real English prose that an installed package ships: scikit-learn's data set descriptions."""
    import sklearn.datasets

    folder = Path(sklearn.datasets.__file__).parent / "descr"
    return [path.read_text(encoding="utf-8") for path in sorted(folder.glob("*.rst"))]
