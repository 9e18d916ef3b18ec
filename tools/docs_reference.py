"""Pages of the documentation site that are generated at build time, so that they cannot go stale.

`tools/docs_gen_files.py` (run by mkdocs-gen-files during `make docs`) writes them into the virtual site:

- ``reference/cli.md`` from the real ``medeval`` argparse parser (:func:`cli_markdown`);
- ``reference/api/<page>.md``: one mkdocstrings block per public package (:data:`API_PAGES`);
- ``gallery.md``: the committed figures ``figures/<study>/*.png`` per study, with the caption of the figure's
  sidecar ``figures/<study>/<name>.json`` when it has one, and the committed tables ``tables/<study>/*``.

Nothing here writes into the checkout. `tests/test_docs_site.py` checks these functions.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import inspect
import json
import os
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# API reference: page slug -> (nav title, modules rendered on it, one-line summary). Every module must have
# ``__all__`` (its members are exactly what the page shows), except those in EXPLICIT_MEMBERS.
API_PAGES: dict[str, tuple[str, tuple[str, ...], str]] = {
    "agreement": ("agreement", ("medeval_kit.agreement",), "Agreement coefficients, designs, the Alt-Test."),
    "bias": ("bias", ("medeval_kit.bias",), "Position, length and self-preference bias; calibration."),
    "rounds": ("rounds", ("medeval_kit.rounds",), "Round-wise analysis of iterative generation."),
    "rank": ("rank", ("medeval_kit.rank",), "Model rankings from pairwise verdicts."),
    "psychometrics": ("psychometrics", ("medeval_kit.psychometrics",), "Item analysis of MCQs (CTT, IRT)."),
    "judge": ("judge", ("medeval_kit.judge",), "Judge protocols on one engine."),
    "generate": ("generate", ("medeval_kit.generate",), "Generation pipelines as named stages."),
    "llm": ("llm", ("medeval_kit.llm",), "The LLM client: providers, cache, cost, batch."),
    "pairwise": ("pairwise", ("medeval_kit.pairwise",), "Pairwise slots and resolution policies."),
    "readers": ("readers", ("medeval_kit.readers",), "Other tools' outputs as tidy tables."),
    "datasets": ("datasets", ("medeval_kit.datasets",), "Bundled data loaders and synthetic data."),
    "stats": ("stats", ("medeval_kit.stats",), "Basic statistics and the item bootstrap."),
    "prompts": ("prompts", ("medeval_kit.prompts",), "Prompt templates and rubrics."),
    "viz": ("viz", ("medeval_kit.viz",), "Every plot."),
    "repro": ("repro", ("medeval_kit.repro",), "Paper reproduction."),
    "overview": ("overview", ("medeval_kit.overview",), "Dataset descriptions."),
    "retrieval": ("embed and retrieve", ("medeval_kit.embed", "medeval_kit.retrieve"), "Embeddings and few-shot retrieval."),
    "ground": (
        "schemas, results, tables, errors, paths, json_schema",
        ("medeval_kit.schemas", "medeval_kit.results", "medeval_kit.tables", "medeval_kit.errors", "medeval_kit.paths",
         "medeval_kit.json_schema"),
        "The ground layer: tidy tables, the result contract, writers, exceptions, the one root resolver, JSON Schema.",
    ),
    "conventions": (
        "columns, docstrings, deprecation",
        ("medeval_kit.columns", "medeval_kit.docstrings", "medeval_kit.deprecation"),
        "Your column names mapped once, parameter descriptions shared by the docstrings, old names kept one release.",
    ),
    "extending": (
        "plugins and provenance",
        ("medeval_kit.plugins", "medeval_kit.provenance"),
        "Third-party coefficients, protocols and providers through entry points; the run context of a notebook.",
    ),
    "apps": ("apps", ("medeval_kit.apps",), "Data access of the marimo apps."),
}

# Top-level modules of medeval_kit that have no API page, and why (the test fails on any other one).
NOT_IN_API: dict[str, str] = {
    "medeval_kit.cli": "the command line: its reference is generated from the parser (reference/cli.md)",
    "medeval_kit.templates": "files copied by `medeval init`, not Python API",
}

# Modules without ``__all__``: their public names, listed here (the test checks the list is complete).
EXPLICIT_MEMBERS: dict[str, tuple[str, ...]] = {}


def generated_pages() -> list[str]:
    """The pages `tools/docs_gen_files.py` writes into the virtual site (none of them is in ``docs/``)."""
    return ["reference/cli.md", "reference/api/index.md", *(f"reference/api/{s}.md" for s in API_PAGES), "gallery.md"]


def api_modules() -> list[str]:
    """Every module rendered in the API reference, in page order."""
    return [m for _, mods, _ in API_PAGES.values() for m in mods]


def public_names(module: str) -> list[str]:
    """The members a module's API page shows: its runtime ``__all__`` (or its EXPLICIT_MEMBERS entry)."""
    if module in EXPLICIT_MEMBERS:
        return list(EXPLICIT_MEMBERS[module])
    names = getattr(importlib.import_module(module), "__all__", None)
    if names is None:
        raise AttributeError(f"{module} has no __all__; add one or list it in EXPLICIT_MEMBERS")
    return list(dict.fromkeys(names))


def api_blocks(module: str) -> list[tuple[str, list[str] | None]]:
    """The mkdocstrings blocks that render one module: ``[(identifier, members or None), ...]``.

    The first is the module with the names of its ``__all__``. A name that is also a submodule's name is
    shadowed by that submodule for griffe (``agreement.alt_test``, the function, next to
    ``agreement/alt_test.py``), and a submodule exported in ``__all__`` is not rendered as a member: each
    gets a block of its own, the function under its defining path, the submodule with its own ``__all__``.
    """
    main: list[str] = []
    extra: list[tuple[str, list[str] | None]] = []
    runtime = importlib.import_module(module)
    for name in public_names(module):
        value = getattr(runtime, name, None)
        if inspect.ismodule(value):
            sub = getattr(value, "__all__", None)
            extra.append((value.__name__, list(dict.fromkeys(sub)) if sub is not None else None))
        elif _is_submodule(module, name) and (inspect.isfunction(value) or inspect.isclass(value)):
            extra.append((f"{value.__module__}.{value.__qualname__}", None))
        else:
            main.append(name)
    return [(module, main), *extra]


def shadowed_names(module: str) -> dict[str, str]:
    """``{module.name: identifier}`` for the names of ``__all__`` rendered in a block of their own."""
    out = {}
    runtime = importlib.import_module(module)
    for ident, _ in api_blocks(module)[1:]:
        for name in public_names(module):
            value = getattr(runtime, name, None)
            path = value.__name__ if inspect.ismodule(value) else f"{getattr(value, '__module__', '')}.{getattr(value, '__qualname__', '')}"
            if path == ident:
                out[f"{module}.{name}"] = ident
    return out


def _is_submodule(module: str, name: str) -> bool:
    try:
        return importlib.util.find_spec(f"{module}.{name}") is not None
    except (ImportError, ValueError):
        return False


def api_page_markdown(slug: str) -> str:
    """The Markdown of one API page: a mkdocstrings block per module, members from ``__all__``."""
    title, modules, summary = API_PAGES[slug]
    single = len(modules) == 1
    lines: list[str] = []
    if not single:
        lines += [f"# {title}", "", summary, ""]
    for module in modules:
        for k, (ident, members) in enumerate(api_blocks(module)):
            level = (1 if single else 2) + (k > 0)
            lines += [f"::: {ident}", "    options:", f"      heading_level: {level}"]
            if members is not None:
                lines.append(f"      members: {json.dumps(members)}")
            lines.append("")
    return "\n".join(lines)


def api_index_markdown() -> str:
    """The API reference's landing page: one line per page."""
    lines = [
        "# API reference",
        "",
        "Generated from the docstrings (numpy style) of each public package; every page shows exactly the "
        "names in the package's `__all__`, so `from medeval_kit import bias; bias.position_bias(...)` is "
        "what you read here. Layers and conventions are in [Development](../../development.md).",
        "",
        "| page | modules | what lives there |",
        "|---|---|---|",
    ]
    for slug, (title, modules, summary) in API_PAGES.items():
        mods = ", ".join(f"`{m}`" for m in modules)
        lines.append(f"| [{title}]({slug}.md) | {mods} | {summary} |")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- CLI reference


def iter_commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> Iterator[
        tuple[tuple[str, ...], argparse.ArgumentParser, str | None]]:
    """Yield ``(command path, parser, one-line help)`` for every sub-command, depth first, aliases once."""
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        helps = {a.dest: a.help for a in action._choices_actions}
        seen: set[int] = set()
        for name, sub in action.choices.items():
            if id(sub) in seen:
                continue
            seen.add(id(sub))
            yield (*path, name), sub, helps.get(name)
            yield from iter_commands(sub, (*path, name))


def _cell(text: object) -> str:
    """Text safe inside a Markdown table cell (no raw HTML, no column breaks, no emphasis)."""
    s = " ".join(str(text).split())
    return s.replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;").replace("*", "\\*")


def _code(text: object) -> str:
    """Inline code for a table cell (backticks inside get a longer fence)."""
    s = " ".join(str(text).split()).replace("|", "\\|")
    fence = "``" if "`" in s else "`"
    pad = " " if s.startswith("`") or s.endswith("`") else ""
    return f"{fence}{pad}{s}{pad}{fence}"


def _help_text(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    if not action.help or action.help == argparse.SUPPRESS:
        return ""
    try:
        return parser._get_formatter()._expand_help(action)
    except (KeyError, TypeError, ValueError):
        return action.help


def _option_rows(parser: argparse.ArgumentParser) -> list[str]:
    rows = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) or action.help == argparse.SUPPRESS:
            continue
        if action.option_strings:
            metavar = ""
            if action.nargs != 0:
                fmt = parser._get_formatter()
                metavar = " " + fmt._format_args(action, fmt._get_default_metavar_for_optional(action))
            names = ", ".join(f"{o}{metavar}" for o in action.option_strings)
        else:
            fmt = parser._get_formatter()
            names = fmt._format_args(action, fmt._get_default_metavar_for_positional(action))
        help_ = _cell(_help_text(parser, action))
        if action.choices is not None and not isinstance(action, argparse._SubParsersAction):
            choices = ", ".join(f"`{c}`" for c in action.choices)
            help_ = f"{help_}<br>Choices: {choices}." if help_ else f"Choices: {choices}."
        default = action.default
        no_default = (
            default is None
            or default is argparse.SUPPRESS
            or isinstance(action, argparse._HelpAction)
            or (action.option_strings and action.nargs == 0 and isinstance(default, bool))  # a flag
            or (not action.option_strings and action.required)
        )
        shown = "" if no_default else _code(repr(default) if isinstance(default, str) else default)
        if action.required and action.option_strings:
            help_ = f"**Required.** {help_}"
        rows.append(f"| {_code(names)} | {help_} | {shown} |")
    return rows


def _usage(parser: argparse.ArgumentParser) -> str:
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "100"  # stable line breaks, whatever the terminal
    try:
        return parser.format_usage().strip()
    finally:
        if old is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = old


def command_title(path: tuple[str, ...], prog: str = "medeval") -> str:
    """The heading of one command's section, e.g. ``medeval cache prune``."""
    return " ".join((prog, *path))


def cli_markdown(parser: argparse.ArgumentParser | None = None) -> str:
    """The CLI reference: every sub-command of the parser with usage, description and options.

    With no ``parser``, the real one (:func:`medeval_kit.cli.build_parser`).
    """
    if parser is None:
        from medeval_kit.cli import build_parser

        parser = build_parser()
    prog = parser.prog
    commands = list(iter_commands(parser))
    out = [
        "# Command line",
        "",
        f"Generated from the `{prog}` argparse parser when this site is built, so it always matches "
        f"`{prog} <command> --help`.",
        "",
        "| command | what it does |",
        "|---|---|",
    ]
    for path, _sub, help_ in commands:
        title = command_title(path, prog)
        out.append(f"| [`{title}`](#{_anchor(title)}) | {_cell(help_ or '')} |")
    out += ["", f"## {prog}", "", _cell(parser.description or ""), "", "```text", _usage(parser), "```", ""]
    for path, sub, help_ in commands:
        title = command_title(path, prog)
        level = "#" * min(1 + len(path), 6)  # ## medeval cache, ### medeval cache prune
        out += [f"{level} {title} {{#{_anchor(title)}}}", ""]
        desc = sub.description or help_ or ""
        if desc:
            out += [_paragraph(desc), ""]
        out += ["```text", _usage(sub), "```", ""]
        rows = _option_rows(sub)
        if rows:
            out += ["| option | description | default |", "|---|---|---|", *rows, ""]
        if sub.epilog:
            out += [_paragraph(sub.epilog), ""]
    return "\n".join(out)


def _anchor(title: str) -> str:
    return title.replace(" ", "-").lower()


def _paragraph(text: str) -> str:
    """A parser description as Markdown: kept line by line, with raw HTML escaped."""
    return "\n".join(line.replace("<", "&lt;").replace(">", "&gt;").rstrip() for line in text.strip().splitlines())


# --------------------------------------------------------------------------- gallery

FIGURE_CAPTION_KEYS = ("caption", "title", "description")
INLINE_TABLE_BYTES = 6000  # committed Markdown tables up to this size are shown inline (collapsed)


def study_description(study: str, root: Path = ROOT) -> str:
    path = root / "studies" / f"{study}.yaml"
    if not path.is_file():
        return ""
    import yaml

    try:
        return str((yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("description") or "")
    except yaml.YAMLError:
        return ""


def figure_caption(png: Path) -> str:
    """The caption of a committed figure: from its JSON sidecar when that has one, else empty."""
    sidecar = png.with_suffix(".json")
    if not sidecar.is_file():
        return ""
    try:
        meta = json.loads(sidecar.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ""
    if not isinstance(meta, dict):
        return ""
    for key in FIGURE_CAPTION_KEYS:
        if isinstance(meta.get(key), str) and meta[key].strip():
            return meta[key].strip()
    return ""


def gallery_studies(root: Path = ROOT) -> list[str]:
    """Studies with committed PNG figures or tables, sorted."""
    names = {p.parent.name for p in (root / "figures").glob("*/*.png")}
    names |= {p.parent.name for p in (root / "tables").glob("*/*.csv")}
    return sorted(names)


def gallery(root: Path = ROOT) -> tuple[str, list[tuple[Path, str]]]:
    """The gallery page and the files to copy into the site: ``(markdown, [(source, site path)])``."""
    copies: list[tuple[Path, str]] = []
    out = [
        "# Gallery",
        "",
        "The committed figures and tables of every study (`make figures` regenerates them byte for byte; "
        "see [Studies and notebooks](guide/studies-and-notebooks.md)). Figures are the PNG versions; the PDF "
        "and SVG next to them in `figures/<study>/` are identical. Tables link to their CSV.",
        "",
    ]
    studies = gallery_studies(root)
    out += ["| study | figures | tables | description |", "|---|---|---|---|"]
    for study in studies:
        n_fig = len(list((root / "figures" / study).glob("*.png")))
        n_tab = len(list((root / "tables" / study).glob("*.csv")))
        out.append(f"| [{study}](#{study.replace('_', '-')}) | {n_fig} | {n_tab} | {_cell(study_description(study, root))} |")
    out.append("")
    for study in studies:
        out += [f"## {study} {{#{study.replace('_', '-')}}}", ""]
        desc = study_description(study, root)
        if desc:
            out += [_cell(desc), ""]
        for png in sorted((root / "figures" / study).glob("*.png")):
            target = f"gallery/{study}/{png.name}"
            copies.append((png, target))
            caption = _caption(figure_caption(png))
            out += [
                "<figure markdown>",
                f"![{caption or png.stem}]({target}){{ loading=lazy }}",
                f"<figcaption>{caption + ' ' if caption else ''}<code>figures/{study}/{png.name}</code></figcaption>",
                "</figure>",
                "",
            ]
        tables = sorted((root / "tables" / study).glob("*.csv"))
        if tables:
            out += [f"### Tables of {study}", ""]
        for csv in tables:
            target = f"gallery/tables/{study}/{csv.name}"
            copies.append((csv, target))
            md = csv.with_suffix(".md")
            line = f"- [`tables/{study}/{csv.name}`]({target})"
            if md.is_file() and md.stat().st_size <= INLINE_TABLE_BYTES:
                body = [_table_line(b) for b in md.read_text(encoding="utf-8").strip().splitlines()]
                out += [f'??? note "tables/{study}/{md.name}"', "", f"    [CSV]({target})", "",
                        *("    " + b for b in body), ""]
            else:
                out += [line, ""]
    return "\n".join(out) + "\n", copies


def _table_line(line: str) -> str:
    """A committed Markdown table's line with no link, reference or raw HTML syntax in its cells."""
    for a, b in (("[", "\\["), ("]", "\\]"), ("*", "\\*"), ("<", "&lt;"), (">", "&gt;")):
        line = line.replace(a, b)
    return line


def _caption(text: str) -> str:
    """A figure caption as inline Markdown text (no link syntax, no raw HTML)."""
    return _cell(text).replace("[", "\\[").replace("]", "\\]")
