import importlib
import sys
from pathlib import Path
from types import ModuleType

#: The experiment scripts' folder (they import each other and ``common`` by name).
EXPERIMENTS = Path(__file__).resolve().parents[2] / "experiments"


def experiment(name: str) -> ModuleType:
    """The experiment script ``experiments/<name>.py`` imported as a module (its folder on ``sys.path`` meanwhile)."""
    sys.path.insert(0, str(EXPERIMENTS))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(EXPERIMENTS))
