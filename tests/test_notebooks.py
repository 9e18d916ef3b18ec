"""Every notebook has one `parameters` cell and no committed outputs; marimo apps are plain .py."""

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def test_there_are_notebooks():
    assert NOTEBOOKS, "no notebooks found"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_parameters_cell_and_no_outputs(path):
    nb = json.loads(path.read_text())
    tagged = [c for c in nb["cells"] if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(tagged) == 1, f"{path.name}: expected exactly one cell tagged 'parameters'"
    assert tagged[0]["cell_type"] == "code"
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] == "code":
            assert not cell.get("outputs"), f"{path.name}: cell {i} has saved outputs; strip them"
            assert cell.get("execution_count") is None, f"{path.name}: cell {i} has an execution count"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_parameters_are_typed_and_documented(path):
    import papermill as pm

    params = pm.inspect_notebook(str(path))
    assert {"study", "figures_dir", "tables_dir", "seed"} <= set(params), path.name
    for name, p in params.items():
        assert p["inferred_type_name"] not in ("None", None), f"{path.name}: {name} has no type annotation"
        assert p["help"], f"{path.name}: {name} has no '# help' comment"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebooks_stay_thin(path):
    nb = json.loads(path.read_text())
    code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    assert "\ndef " not in "\n" + code, f"{path.name}: define functions in the package, not the notebook"
    assert "import re\n" not in code and "%pip" not in code
