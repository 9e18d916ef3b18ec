"""The documentation site's generators (`make docs`; the build itself runs in `.ci/run`, not here):
the CLI reference covers every sub-command, the nav lists only pages that exist or are generated, the
docstring role rewriter, and every package of the API reference has ``__all__``."""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import re
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import docs_reference as ref  # noqa: E402 - tools/ is not a package
import docs_rst  # noqa: E402


def walk_commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> dict[tuple[str, ...], argparse.ArgumentParser]:
    """Every sub-command of ``parser`` (aliases once), found independently of the generator."""
    found = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            by_parser = {}
            for name, sub in action.choices.items():
                by_parser.setdefault(id(sub), (name, sub))
            for name, sub in by_parser.values():
                found[(*path, name)] = sub
                found.update(walk_commands(sub, (*path, name)))
    return found


def missing_from_reference(markdown: str, parser: argparse.ArgumentParser) -> list[str]:
    """Sub-commands (and their options) of ``parser`` that the CLI reference ``markdown`` does not document."""
    missing = []
    prog = parser.prog
    for path, sub in walk_commands(parser).items():
        title = " ".join((prog, *path))
        m = re.search(rf"^#+ {re.escape(title)} \{{#[^}}]+\}}$(?P<body>.*?)(?=^#+ |\Z)", markdown, re.M | re.S)
        if not m:
            missing.append(title)
            continue
        body = m.group("body")
        if "```text" not in body or "usage:" not in body:
            missing.append(f"{title}: usage")
        for action in sub._actions:
            if isinstance(action, argparse._SubParsersAction) or action.help == argparse.SUPPRESS:
                continue
            for option in action.option_strings:
                if not re.search(rf"(?:`|, ){re.escape(option)}[ `,]", body):
                    missing.append(f"{title} {option}")
            if action.help and action.help != argparse.SUPPRESS and "%(" not in action.help:
                first_words = " ".join(action.help.split()[:3])
                if ref._cell(first_words) not in body:
                    missing.append(f"{title} {action.dest}: help")
    return missing


def toy_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="toy", description="A toy CLI.")
    sub = parser.add_subparsers(dest="command")
    a = sub.add_parser("alpha", help="first command", description="The first command.", aliases=["a"])
    a.add_argument("path", help="an input file")
    a.add_argument("--metric", default="cohen_kappa", choices=["cohen_kappa", "pabak"], help="which coefficient")
    a.add_argument("--n-boot", type=int, default=1000, help="bootstrap resamples (default %(default)s)")
    a.add_argument("--plain", action="store_true", help="no colours")
    cache = sub.add_parser("cache", help="the LLM cache")
    nested = cache.add_subparsers(dest="what")
    prune = nested.add_parser("prune", help="drop old rows")
    prune.add_argument("--older-than", required=True, help="an age like 30d | 2w")
    return parser


def test_cli_reference_covers_every_subcommand_of_the_real_parser():
    from medeval_kit.cli import build_parser

    parser = build_parser()
    commands = walk_commands(parser)
    assert {"run", "agreement", "judge-vs-humans"} <= {p[0] for p in commands}
    assert ("cache", "prune") in commands  # nested sub-commands count too
    markdown = ref.cli_markdown(parser)
    assert missing_from_reference(markdown, parser) == []
    assert [p for p, _, _ in ref.iter_commands(parser)] == list(commands)


def test_cli_reference_of_a_toy_parser_and_the_check_fails_on_a_missing_command():
    parser = toy_parser()
    markdown = ref.cli_markdown(parser)
    assert missing_from_reference(markdown, parser) == []
    assert markdown.count("## toy alpha {#toy-alpha}") == 1  # the alias "a" is not a second command
    assert "### toy cache prune {#toy-cache-prune}" in markdown
    assert "| `--metric METRIC` |" in markdown or "| `--metric {cohen_kappa,pabak}` |" in markdown
    assert "`'cohen_kappa'`" in markdown and "`1000`" in markdown  # defaults
    assert "bootstrap resamples (default 1000)" in markdown  # %(default)s expanded
    assert "30d \\| 2w" in markdown and "**Required.**" in markdown  # a pipe cannot break the table
    # the check itself can fail: drop one command's section, or one option
    without = re.sub(r"^### toy cache prune.*?(?=^#|\Z)", "", markdown, flags=re.M | re.S)
    assert missing_from_reference(without, parser) == ["toy cache prune"]
    assert "toy alpha --plain" in missing_from_reference(markdown.replace("`--plain`", "`--flat`"), parser)
    sub_parsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    sub_parsers.add_parser("gamma", help="added after the reference was written")
    assert missing_from_reference(markdown, parser) == ["toy gamma"]


def nav_files(nav) -> list[str]:
    out = []
    for entry in nav:
        if isinstance(entry, str):
            out.append(entry)
        elif isinstance(entry, dict):
            for value in entry.values():
                out += nav_files(value) if isinstance(value, list) else [value]
    return out


def test_nav_lists_only_existing_or_generated_pages_and_every_page():
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    docs = ROOT / config.get("docs_dir", "docs")
    listed = nav_files(config["nav"])
    generated = set(ref.generated_pages())
    assert len(listed) == len(set(listed)), "a page is listed twice in the nav"
    absent = [p for p in listed if p not in generated and not (docs / p).is_file()]
    assert absent == [], f"mkdocs.yml nav lists pages that do not exist: {absent}"
    assert generated <= set(listed), f"generated pages missing from the nav: {sorted(generated - set(listed))}"
    on_disk = {p.relative_to(docs).as_posix() for p in docs.rglob("*.md")}
    assert on_disk - set(listed) == set(), "pages in docs/ missing from the nav"
    assert not on_disk & generated, "a generated page would be shadowed by a file in docs/"
    # the snippet of development.md names a file that exists
    for snippet in re.findall(r'--8<-- "([^":]+)', (docs / "development.md").read_text(encoding="utf-8")):
        assert (ROOT / snippet).is_file(), snippet


SAMPLE = '''Fit the model; see :func:`agreement` and :func:`~medeval_kit.bias.position_bias`.

Returns an :class:`AgreementResult` (not :class:`Hidden`); plots are in :mod:`medeval_kit.viz`,
helpers in :mod:`medeval_kit.cli.params`. ``n_boot`` resamples; :meth:`Prompt.render <medeval_kit.prompts.Prompt.render>`.

A study is ``studies/<name>.yaml``::

    runs:
      - name: pandalm

.. code-block:: python

    x = 1

>>> agreement(df, "cohen_kappa")  # doctest: +SKIP
AgreementResult(...)

Parameters
----------
df : DataFrame
    The ``annotations`` table.'''

EXPECTED = '''Fit the model; see [`agreement`][medeval_kit.agreement.agreement] and [`position_bias`][medeval_kit.bias.position_bias].

Returns an [`AgreementResult`][medeval_kit.agreement.AgreementResult] (not `Hidden`); plots are in [`medeval_kit.viz`][medeval_kit.viz],
helpers in `medeval_kit.cli.params`. `n_boot` resamples; [`Prompt.render`][medeval_kit.prompts.Prompt.render].

A study is `studies/<name>.yaml`:

```
runs:
  - name: pandalm
```

```python
x = 1
```

```pycon
>>> agreement(df, "cohen_kappa")
AgreementResult(...)
```

Parameters
----------
df : DataFrame
    The `annotations` table.'''


def test_role_rewriter_turns_roles_and_rst_into_markdown():
    known = {
        "agreement": "medeval_kit.agreement.agreement",
        "medeval_kit.bias.position_bias": "medeval_kit.bias.position_bias",
        "AgreementResult": "medeval_kit.agreement.AgreementResult",
        "medeval_kit.viz": "medeval_kit.viz",
        "medeval_kit.prompts.Prompt.render": "medeval_kit.prompts.Prompt.render",
    }
    seen = []

    def resolve(role, target):
        seen.append((role, target))
        return known.get(target)

    assert docs_rst.rewrite_docstring(SAMPLE, resolve) == EXPECTED
    assert ("func", "agreement") in seen and ("mod", "medeval_kit.cli.params") in seen
    # without a resolver every role is inline code; nothing inside code blocks is touched
    plain = docs_rst.rewrite_docstring(SAMPLE)
    assert "[`" not in plain and "`position_bias`" in plain and ":func:" not in plain
    fenced = "```\n:func:`kept` ``as is``\n```"
    assert docs_rst.rewrite_docstring(fenced) == fenced


def test_role_rewriter_admonition_and_trailing_text():
    text = "Intro.\n\n.. note:: Read :func:`x` first.\n\n   More ``here``.\n\nAfter."
    out = docs_rst.rewrite_docstring(text)
    assert out == "Intro.\n\n!!! note\n    Read `x` first.\n\n    More `here`.\n\nAfter."
    # code and roles wrapped over a line break (a docstring's paragraph is rewritten as a whole)
    wrapped = "the contract (``estimate, ci_low,\nnote``); a ``note``; :func:`~medeval_kit.bias.\nposition_bias`."
    assert docs_rst.rewrite_docstring(wrapped) == "the contract (`estimate, ci_low,\nnote`); a `note`; `position_bias`."


def test_every_api_package_exists_and_has_all():
    modules = ref.api_modules()
    assert len(modules) == len(set(modules))
    for name in ["agreement", "bias", "rounds", "rank", "psychometrics", "judge", "generate", "llm", "pairwise",
                 "readers", "datasets", "stats", "prompts", "viz", "repro", "schemas", "results", "tables",
                 "errors", "paths", "embed", "retrieve", "overview"]:
        assert f"medeval_kit.{name}" in modules, name
    for module in modules:
        mod = importlib.import_module(module)
        if module in ref.EXPLICIT_MEMBERS:
            assert not hasattr(mod, "__all__"), f"{module} has __all__ now: drop it from EXPLICIT_MEMBERS"
            defined = {n for n, v in vars(mod).items() if not n.startswith("_") and (inspect.isclass(v) or inspect.isfunction(v))
                       and getattr(v, "__module__", None) == module}
            assert defined == set(ref.EXPLICIT_MEMBERS[module]), module
            continue
        assert hasattr(mod, "__all__"), f"{module} has no __all__"
        missing = [n for n in mod.__all__ if not hasattr(mod, n)]
        assert missing == [], f"{module}.__all__ names what it does not have: {missing}"
        blocks = ref.api_blocks(module)
        shown = set(blocks[0][1]) | {p.rsplit(".", 1)[-1] for p in ref.shadowed_names(module)}
        assert set(ref.shadowed_names(module).values()) == {ident for ident, _ in blocks[1:]}
        assert set(mod.__all__) <= shown, f"{module}: {sorted(set(mod.__all__) - shown)} not rendered"


def test_every_public_module_has_an_api_page():
    import pkgutil

    import medeval_kit

    documented = set(ref.api_modules())
    top = {f"medeval_kit.{m.name}" for m in pkgutil.iter_modules(medeval_kit.__path__) if not m.name.startswith("_")}
    assert top - documented - set(ref.NOT_IN_API) == set(), "a public module has no API page: add it to API_PAGES"
    assert set(ref.NOT_IN_API) <= top and not set(ref.NOT_IN_API) & documented
    from tests.api_surface import PACKAGES  # the public API as the API tests see it

    assert {f"medeval_kit.{p}" for p in PACKAGES} <= documented


def test_api_pages_render_members_from_all():
    page = ref.api_page_markdown("agreement")
    assert page.startswith("::: medeval_kit.agreement\n")
    members = json.loads(re.search(r"members: (\[.*\])", page).group(1))
    assert "cohen_kappa" in members and "agreement" in members  # cohen_kappa is made at import time
    # a function named like its submodule gets a block of its own under its defining path
    assert "::: medeval_kit.agreement.alt_test.alt_test" in page and "alt_test" not in members
    ground = ref.api_page_markdown("ground")
    assert ground.startswith("# ") and ground.count("\n::: medeval_kit.") >= 5


def test_gallery_lists_every_committed_figure_with_its_caption(tmp_path):
    page, copies = ref.gallery()
    pngs = sorted(ROOT.glob("figures/*/*.png"))
    assert pngs and sorted(src for src, _ in copies if src.suffix == ".png") == pngs
    for study in {p.parent.name for p in pngs}:
        assert f"\n## {study} " in page
    (tmp_path / "figures" / "demo").mkdir(parents=True)
    (tmp_path / "tables" / "demo").mkdir(parents=True)
    (tmp_path / "figures" / "demo" / "f.png").write_bytes(b"png")
    (tmp_path / "figures" / "demo" / "f.json").write_text(json.dumps({"caption": "Kappa by judge [95% CI]"}))
    (tmp_path / "figures" / "demo" / "g.png").write_bytes(b"png")
    (tmp_path / "tables" / "demo" / "t.csv").write_text("a,b\n1,2\n")
    (tmp_path / "tables" / "demo" / "t.md").write_text("| a | b |\n|--:|--:|\n| [1] | <2> |\n")
    page, copies = ref.gallery(tmp_path)
    assert "<figcaption>Kappa by judge \\[95% CI\\] <code>figures/demo/f.png</code></figcaption>" in page
    assert "<figcaption><code>figures/demo/g.png</code></figcaption>" in page
    assert "[CSV](gallery/tables/demo/t.csv)" in page and "\\[1\\] | &lt;2&gt;" in page
    assert [t for _, t in copies] == ["gallery/demo/f.png", "gallery/demo/g.png", "gallery/tables/demo/t.csv"]


@pytest.mark.parametrize("target", ["Makefile", ".ci/run"])
def test_docs_target_is_wired(target):
    text = (ROOT / target).read_text(encoding="utf-8")
    if target == "Makefile":
        assert re.search(r"^docs: .*\n\t.*mkdocs build --strict", text, re.M)
        assert "[docs]" not in text.split("$(STAMP):", 1)[1].split("\n\n", 1)[0]  # not in make setup
    else:
        lines = [line.strip() for line in text.splitlines()]
        assert lines.index("make lint") < lines.index("make docs") < lines.index("make test")
