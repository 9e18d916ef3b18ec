"""Build step only: ``pyproject.toml`` holds the metadata.

The library reads the repository's ``prompts/``, ``data/`` (price table, published numbers, bundled
datasets), ``notebooks/`` and ``studies/`` (see ``medeval_kit/paths.py``). The checkout keeps that
layout for development; a built wheel carries a copy of them as ``medeval_kit/_bundle/<same paths>``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
# (folder, glob patterns) copied into medeval_kit/_bundle/<folder>/; data/cache/ is never shipped
BUNDLE = {
    "prompts": ["**/*"],
    "data": ["README.md", "prices.yaml", "lineage.yaml", "published/**/*", "pandalm/**/*", "medqg/**/*",
             "grounded_synth/**/*"],
    "notebooks": ["*.ipynb", "*_app.py"],
    "studies": ["*.yaml"],
}
SKIP = {"__pycache__", ".ipynb_checkpoints", "__marimo__", "cache"}


def bundle_files(src: Path = HERE):
    """Yield each (source file, path relative to the repository) that goes into the bundle."""
    for folder, patterns in BUNDLE.items():
        for pattern in patterns:
            for f in sorted((src / folder).glob(pattern)):
                rel = f.relative_to(src)
                if f.is_file() and not SKIP & set(rel.parts) and f.suffix != ".pyc":
                    yield f, rel


class BuildPyWithBundle(build_py):
    """``build_py`` that also copies the resources into ``medeval_kit/_bundle/`` (not in editable mode)."""

    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):  # editable install: paths.py reads the checkout
            return
        dest = Path(self.build_lib) / "medeval_kit" / "_bundle"
        shutil.rmtree(dest, ignore_errors=True)
        for f, rel in bundle_files():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(f, dest / rel)


setup(cmdclass={"build_py": BuildPyWithBundle})
