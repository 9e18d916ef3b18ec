"""Prompt templates and rubrics stored as user-editable files under ``prompts/``.

Template format
---------------
A template is a Markdown file ``prompts/<group>/<name>.md``: YAML front-matter between two
``---`` lines, then a body with one ``## system`` section (optional) and one ``## user``
section (required), in that order. ``{{variable}}`` placeholders are filled by
:meth:`Prompt.render`; every placeholder must be declared under ``variables`` and every
declared variable must be used. ``{{{{`` and ``}}}}`` produce literal ``{{`` and ``}}``.

.. code-block:: markdown

    ---
    name: judge/pairwise
    version: 1
    description: Pairwise preference with tie.
    variables: [question, answer_a, answer_b]
    polarity: normal            # or "reversed": choosing a response means it is WORSE
    schema:                     # optional JSON schema of the expected reply
      type: object
      properties: {verdict: {enum: ["A", "B", "tie"]}}
      required: [verdict]
    ---
    ## system
    You are a careful medical expert.

    ## user
    Question: {{question}} ...

Front-matter keys ``name``, ``version``, ``description``, ``variables``, ``schema`` and
``polarity`` are attributes of :class:`Prompt`; any other key is kept in :attr:`Prompt.meta`.

The folder is ``prompts/`` in the project root (``MEDEVAL_ROOT``), else the toolkit's own
(:func:`medeval_kit.paths.prompts_dir`), unless ``root=`` is passed.

Rubrics are YAML files ``prompts/rubrics/<name>.yaml`` loaded by :func:`load_rubric`.

>>> p = load_prompt("judge/pairwise")
>>> [m["role"] for m in p.render(question="q", answer_a="a", answer_b="b", criterion="overall",
...                              criterion_description="overall quality")]
['system', 'user']
"""

from __future__ import annotations

import copy
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from medeval_kit.errors import MedevalError

__all__ = [
    "Prompt",
    "PromptError",
    "Rubric",
    "Aspect",
    "Component",
    "POLARITIES",
    "load_prompt",
    "list_prompts",
    "parse_prompt",
    "load_rubric",
    "list_rubrics",
]

POLARITIES = ("normal", "reversed")
"""``normal``: the chosen response is better. ``reversed``: the chosen response is worse
(e.g. "which response is more harmful?")."""

_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
_SECTION = re.compile(r"^##[ \t]+(system|user)[ \t]*$", re.MULTILINE | re.IGNORECASE)
# One pass over the template: an escaped brace pair or a placeholder, never the inserted values.
_TOKEN = re.compile(r"\{\{\{\{|\}\}\}\}|" + _PLACEHOLDER.pattern)


class PromptError(MedevalError, ValueError):
    """A template or rubric is malformed, or render() got missing/extra variables."""


def _folder(root: str | Path | None = None) -> Path:
    """Return the prompts folder: ``root``, else :func:`medeval_kit.paths.prompts_dir`.

    Served as the deprecated ``prompts.prompts_dir``; ``paths.prompts_dir`` is the one public name.

    Parameters
    ----------
    root : str or path-like, optional
        A prompts folder of your own.

    Returns
    -------
    pathlib.Path
        ``root``, else the project's ``prompts/`` when it exists, else the toolkit's.
    """
    from medeval_kit import paths

    return Path(root) if root is not None else paths.prompts_dir()


@dataclass(frozen=True)
class Prompt:
    """A loaded template. ``render(**variables)`` returns chat messages.

    Parameters
    ----------
    name : str
        The template's name (``group/name``, e.g. ``"judge/pairwise"``).
    version : str
        Its version, from the front matter.
    description : str
        What it asks, from the front matter.
    variables : tuple of str
        The placeholders ``render`` fills.
    system : str or None
        The system message, if any.
    user : str
        The user message.
    schema : dict, optional
        The JSON schema of the expected reply.
    polarity : {"normal", "reversed"}, default "normal"
        ``"reversed"`` when choosing a response means it is worse (:data:`POLARITIES`).
    meta : dict
        Any other front-matter keys.
    path : str, optional
        The file it was read from.

    Examples
    --------
    >>> p = load_prompt("judge/pairwise")
    >>> p.polarity, p.reversed
    ('normal', False)
    """

    name: str
    version: str
    description: str
    variables: tuple[str, ...]
    system: str | None
    user: str
    schema: dict | None = None
    polarity: str = "normal"
    meta: dict = field(default_factory=dict)
    path: str | None = None

    __hash__ = None  # type: ignore[assignment]

    @property
    def reversed(self) -> bool:
        """True when choosing a response means it is worse (harmfulness, bias ...)."""
        return self.polarity == "reversed"

    def render(self, **variables: Any) -> list[dict[str, str]]:
        """Fill the placeholders; return ``[{"role": "system", ...}, {"role": "user", ...}]``.

        Raises :class:`PromptError` naming the template file and the variable when a declared
        variable is missing or an undeclared one is passed. Values are converted with ``str()``;
        ``None`` becomes the empty string.
        """
        where = self.path or self.name
        missing = [v for v in self.variables if v not in variables]
        if missing:
            raise PromptError(
                f"{where}: missing variable(s) {missing} for template {self.name!r}; "
                f"it declares {list(self.variables)}. Pass them to render()."
            )
        extra = sorted(set(variables) - set(self.variables))
        if extra:
            raise PromptError(
                f"{where}: unexpected variable(s) {extra} for template {self.name!r}; "
                f"it declares {list(self.variables)}. Remove them or declare them in the front-matter."
            )
        values = {k: "" if v is None else str(v) for k, v in variables.items()}
        out = []
        if self.system is not None:
            out.append({"role": "system", "content": _fill(self.system, values)})
        out.append({"role": "user", "content": _fill(self.user, values)})
        return out

    def info(self) -> pd.DataFrame:
        """One row describing the template (name, version, variables, polarity, has schema, path)."""
        return pd.DataFrame([{
            "name": self.name, "version": self.version, "description": self.description,
            "variables": ", ".join(self.variables), "polarity": self.polarity,
            "schema": self.schema is not None, "path": self.path,
        }])


def _fill(text: str, values: dict[str, str]) -> str:
    """The template with ``{{{{``/``}}}}`` as ``{{``/``}}`` and each placeholder replaced by its value verbatim."""
    return _TOKEN.sub(lambda m: values[m.group(1)] if m.group(1) else m.group(0)[:2], text)


def _split_front_matter(text: str, where: str) -> tuple[dict, str]:
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        raise PromptError(f"{where}: a template must start with a '---' line opening the YAML front-matter.")
    for i in range(1, len(lines)):
        if lines[i].strip() == "---":
            head, body = "".join(lines[1:i]), "".join(lines[i + 1:])
            break
    else:
        raise PromptError(f"{where}: the YAML front-matter is not closed by a second '---' line.")
    try:
        meta = yaml.safe_load(head) or {}
    except yaml.YAMLError as exc:
        raise PromptError(f"{where}: the front-matter is not valid YAML: {exc}") from exc
    if not isinstance(meta, dict):
        raise PromptError(f"{where}: the front-matter must be a YAML mapping (key: value lines).")
    return meta, body


def parse_prompt(text: str, *, name: str | None = None, path: str | None = None) -> Prompt:
    """Parse a template from its text (see the module docstring for the format).

    Parameters
    ----------
    text : str
        The template file's text: YAML front matter, then ``## system`` / ``## user`` sections.
    name : str, optional
        Its name; default the front matter's ``name``.
    path : str, optional
        The file it came from, named in errors.

    Returns
    -------
    Prompt
        The parsed template.

    Raises
    ------
    PromptError
        Malformed front matter or sections, or placeholders that do not match ``variables``.
    """
    where = path or name or "<template>"
    meta, body = _split_front_matter(text, where)
    meta = dict(meta)
    tname = str(meta.pop("name", name or ""))
    if not tname:
        raise PromptError(f"{where}: the front-matter needs a 'name' key.")
    version = str(meta.pop("version", "1"))
    description = str(meta.pop("description", "") or "")
    variables = meta.pop("variables", [])
    if variables is None:
        variables = []
    if not isinstance(variables, list) or not all(isinstance(v, str) for v in variables):
        raise PromptError(f"{where}: 'variables' must be a YAML list of names, got {variables!r}.")
    if len(set(variables)) != len(variables):
        raise PromptError(f"{where}: 'variables' lists a name twice: {variables}.")
    schema = meta.pop("schema", None)
    if schema is not None and not isinstance(schema, dict):
        raise PromptError(f"{where}: 'schema' must be a JSON-schema mapping, got {type(schema).__name__}.")
    if schema is not None:
        try:
            from medeval_kit.json_schema import validator_class

            validator_class(schema).check_schema(schema)
        except ImportError:  # pragma: no cover - jsonschema is a dependency
            pass
        except Exception as exc:  # jsonschema.SchemaError
            raise PromptError(f"{where}: 'schema' is not a valid JSON schema: {exc}") from exc
    polarity = str(meta.pop("polarity", "normal"))
    if polarity not in POLARITIES:
        raise PromptError(f"{where}: 'polarity' must be one of {POLARITIES}, got {polarity!r}.")

    sections = list(_SECTION.finditer(body))
    found = [m.group(1).lower() for m in sections]
    if found not in (["user"], ["system", "user"]):
        raise PromptError(
            f"{where}: the body must have a '## user' section, optionally preceded by one "
            f"'## system' section; found sections {found or 'none'}."
        )
    parts = {}
    for k, m in enumerate(sections):
        end = sections[k + 1].start() if k + 1 < len(sections) else len(body)
        parts[m.group(1).lower()] = body[m.end():end].strip("\n").strip()
    system, user = parts.get("system"), parts["user"]
    if not user:
        raise PromptError(f"{where}: the '## user' section is empty.")

    used: list[str] = []
    for txt in (system or "", user):
        clean = txt.replace("{{{{", "").replace("}}}}", "")
        used += _PLACEHOLDER.findall(clean)
    undeclared = sorted(set(used) - set(variables))
    if undeclared:
        raise PromptError(
            f"{where}: placeholder(s) {['{{' + u + '}}' for u in undeclared]} are not declared under "
            f"'variables' {variables}. Declare them or remove them."
        )
    unused = [v for v in variables if v not in used]
    if unused:
        raise PromptError(f"{where}: declared variable(s) {unused} are never used as {{{{name}}}} in the body.")
    return Prompt(
        name=tname, version=version, description=description, variables=tuple(variables),
        system=system, user=user, schema=copy.deepcopy(schema), polarity=polarity, meta=meta, path=path,
    )


def _template_path(name: str, root: str | Path | None) -> Path:
    base = _folder(root)
    p = Path(name)
    if p.suffix == ".md" and p.is_file():
        return p
    cand = base / (name if name.endswith(".md") else f"{name}.md")
    if not cand.is_file():
        avail = list_prompts(root=root)
        raise PromptError(
            f"no template {name!r}: {cand} does not exist. Available in {base}: {avail or 'none'}."
        )
    return cand


def load_prompt(name: str, *, root: str | Path | None = None) -> Prompt:
    """Load ``prompts/<name>.md`` (e.g. ``"judge/pairwise"``) or a path to a ``.md`` file.

    Parameters
    ----------
    name : str
        A template name (``group/name``) or a path to a ``.md`` file.
    root : str or path-like, optional
        The prompts folder; default the project's ``prompts/``, else the toolkit's (:func:`medeval_kit.paths.prompts_dir`).

    Returns
    -------
    Prompt
        The parsed template.

    Raises
    ------
    PromptError
        No such template, or a malformed one.

    Examples
    --------
    >>> load_prompt("judge/pairwise").name
    'judge/pairwise'
    """
    path = _template_path(name, root)
    return parse_prompt(path.read_text(encoding="utf-8"), name=name, path=str(path))


def list_prompts(group: str | None = None, *, root: str | Path | None = None) -> list[str]:
    """Names (``group/name``) of the templates under the prompts folder, sorted (README*.md and _*.md skipped).

    Parameters
    ----------
    group : str, optional
        Only the templates of this subfolder (e.g. ``"judge"``).
    root : str or path-like, optional
        The prompts folder; default the project's ``prompts/``, else the toolkit's (:func:`medeval_kit.paths.prompts_dir`).

    Returns
    -------
    list of str
        The template names, for :func:`load_prompt`.
    """
    base = _folder(root)
    where = base / group if group else base
    if not where.is_dir():
        return []
    return sorted(str(p.relative_to(base).with_suffix("")).replace(os.sep, "/") for p in where.rglob("*.md")
                  if not p.name.upper().startswith("README") and not p.name.startswith("_"))


# --------------------------------------------------------------------------- rubrics
@dataclass(frozen=True)
class Aspect:
    """One rubric aspect: id, text, scale, and its polarity.

    Parameters
    ----------
    id : str
        The aspect's id (a pairwise rubric's criterion).
    component : str
        The id of the component it belongs to.
    description : str
        What the aspect asks.
    min, max : int, default 1 and 5
        The ends of its score scale.
    polarity : {"normal", "reversed"}, default "normal"
        ``"reversed"`` when a higher score (or the chosen response) is worse.
    """

    id: str
    component: str
    description: str
    min: int = 1
    max: int = 5
    polarity: str = "normal"


@dataclass(frozen=True)
class Component:
    """A group of aspects; its score is the sum of its aspect scores over the maximum.

    Parameters
    ----------
    id : str
        The component's id.
    description : str
        What it covers.
    aspects : tuple of Aspect
        Its aspects.
    """

    id: str
    description: str
    aspects: tuple[Aspect, ...]

    @property
    def max_score(self) -> int:
        """The highest total score: the sum of the aspects' maxima."""
        return sum(a.max for a in self.aspects)


@dataclass(frozen=True)
class Rubric:
    """A rubric file: components of aspects (pointwise) or criteria (pairwise, with polarity).

    ``kind`` is ``"pointwise"`` (aspects scored on a scale) or ``"pairwise"`` (criteria on which
    two responses are compared). A file with only ``criteria`` is pairwise; each criterion is
    then stored as a one-aspect component of its own name.

    Parameters
    ----------
    name : str
        The rubric's name.
    version : str
        Its version.
    description : str
        What it is for.
    kind : {"pointwise", "pairwise"}
        Aspects scored on a scale, or criteria on which two responses are compared.
    components : tuple of Component
        Its components (for a pairwise rubric, one per criterion).
    source : str, default ""
        Where it comes from (a paper id, a guideline).
    meta : dict
        Any other keys of the file.
    path : str, optional
        The file it was read from.
    """

    name: str
    version: str
    description: str
    kind: str
    components: tuple[Component, ...]
    source: str = ""
    meta: dict = field(default_factory=dict)
    path: str | None = None

    __hash__ = None  # type: ignore[assignment]

    @property
    def aspects(self) -> tuple[Aspect, ...]:
        return tuple(a for c in self.components for a in c.aspects)

    @property
    def criteria(self) -> tuple[str, ...]:
        """Aspect ids (for a pairwise rubric: its criteria)."""
        return tuple(a.id for a in self.aspects)

    @property
    def reversed_criteria(self) -> tuple[str, ...]:
        return tuple(a.id for a in self.aspects if a.polarity == "reversed")

    def aspect(self, aspect_id: str) -> Aspect:
        for a in self.aspects:
            if a.id == aspect_id:
                return a
        raise PromptError(f"{self.path or self.name}: no aspect {aspect_id!r}; have {list(self.criteria)}.")

    def component(self, component_id: str) -> Component:
        for c in self.components:
            if c.id == component_id:
                return c
        raise PromptError(f"{self.path or self.name}: no component {component_id!r}; "
                          f"have {[c.id for c in self.components]}.")

    def to_frame(self) -> pd.DataFrame:
        """One row per aspect: component, aspect, description, min, max, polarity."""
        return pd.DataFrame([
            {"component": a.component, "aspect": a.id, "description": a.description,
             "min": a.min, "max": a.max, "polarity": a.polarity}
            for a in self.aspects
        ])

    def summary(self) -> str:
        rev = f"; reversed polarity: {', '.join(self.reversed_criteria)}" if self.reversed_criteria else ""
        return (f"rubric {self.name} v{self.version} ({self.kind}): {len(self.components)} components, "
                f"{len(self.aspects)} aspects{rev}")


def _aspect(d: Any, component: str, where: str, default_scale: tuple[int, int]) -> Aspect:
    if isinstance(d, str):
        d = {"id": d}
    if not isinstance(d, dict) or "id" not in d:
        raise PromptError(f"{where}: each aspect needs an 'id' (component {component!r}); got {d!r}.")
    lo, hi = d.get("scale", default_scale)
    pol = str(d.get("polarity", "normal"))
    if pol not in POLARITIES:
        raise PromptError(f"{where}: aspect {d['id']!r} has polarity {pol!r}; use one of {POLARITIES}.")
    if int(hi) <= int(lo):
        raise PromptError(f"{where}: aspect {d['id']!r} has scale {[lo, hi]}; the maximum must exceed the minimum.")
    return Aspect(str(d["id"]), component, str(d.get("description", "")).strip(), int(lo), int(hi), pol)


def load_rubric(name: str, *, root: str | Path | None = None) -> Rubric:
    """Load ``prompts/rubrics/<name>.yaml`` (or a path to a YAML file).

    Pointwise format::

        name: mcqg_srefine
        kind: pointwise
        scale: [1, 5]
        components:
          - id: context
            description: ...
            aspects:
              - {id: relevance, description: ...}

    Pairwise format::

        name: longform
        kind: pairwise
        criteria:
          - {id: harmfulness, description: ..., polarity: reversed}

    Parameters
    ----------
    name : str
        A rubric name (``prompts/rubrics/<name>.yaml``) or a path to a YAML file.
    root : str or path-like, optional
        The prompts folder; default the project's ``prompts/``, else the toolkit's (:func:`medeval_kit.paths.prompts_dir`).

    Returns
    -------
    Rubric
        The parsed rubric.

    Raises
    ------
    PromptError
        No such rubric, or a malformed one.
    """
    p = Path(name)
    if p.suffix in (".yaml", ".yml") and p.is_file():
        path = p
    else:
        path = _folder(root) / "rubrics" / f"{name}.yaml"
        if not path.is_file():
            raise PromptError(f"no rubric {name!r}: {path} does not exist. Available: {list_rubrics(root=root) or 'none'}.")
    where = str(path)
    try:
        d = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise PromptError(f"{where}: not valid YAML: {exc}") from exc
    if not isinstance(d, dict):
        raise PromptError(f"{where}: a rubric must be a YAML mapping.")
    d = dict(d)
    scale = tuple(d.pop("scale", (1, 5)))
    comps: list[Component] = []
    if "components" in d:
        for c in d.pop("components") or []:
            if not isinstance(c, dict) or "id" not in c or not c.get("aspects"):
                raise PromptError(f"{where}: each component needs an 'id' and a non-empty 'aspects' list; got {c!r}.")
            cs = tuple(c.get("scale", scale))
            comps.append(Component(str(c["id"]), str(c.get("description", "")).strip(),
                                   tuple(_aspect(a, str(c["id"]), where, cs) for a in c["aspects"])))
        kind = str(d.pop("kind", "pointwise"))
    elif "criteria" in d:
        for a in d.pop("criteria") or []:
            asp = _aspect(a, "", where, scale)
            asp = Aspect(asp.id, asp.id, asp.description, asp.min, asp.max, asp.polarity)
            comps.append(Component(asp.id, asp.description, (asp,)))
        kind = str(d.pop("kind", "pairwise"))
    else:
        raise PromptError(f"{where}: a rubric needs a 'components' list (pointwise) or a 'criteria' list (pairwise).")
    if not comps:
        raise PromptError(f"{where}: the rubric has no components or criteria.")
    ids = [a.id for c in comps for a in c.aspects]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise PromptError(f"{where}: aspect ids must be unique; repeated: {dup}.")
    if kind not in ("pointwise", "pairwise"):
        raise PromptError(f"{where}: 'kind' must be 'pointwise' or 'pairwise', got {kind!r}.")
    return Rubric(
        name=str(d.pop("name", path.stem)), version=str(d.pop("version", "1")),
        description=str(d.pop("description", "") or "").strip(), kind=kind, components=tuple(comps),
        source=str(d.pop("source", "") or ""), meta=d, path=where,
    )


def list_rubrics(*, root: str | Path | None = None) -> list[str]:
    """Names of the rubric files under ``prompts/rubrics``.

    Parameters
    ----------
    root : str or path-like, optional
        The prompts folder; default the project's ``prompts/``, else the toolkit's (:func:`medeval_kit.paths.prompts_dir`).

    Returns
    -------
    list of str
        The rubric names, sorted, for :func:`load_rubric`.
    """
    base = _folder(root) / "rubrics"
    return sorted(p.stem for p in base.glob("*.yaml")) if base.is_dir() else []


# Old names, kept for one release (medeval_kit.deprecation).
_OLD = {"prompts_dir": ("paths.prompts_dir (or root= of load_prompt/list_prompts)", _folder)}


def __getattr__(name):
    from medeval_kit.deprecation import deprecated_attribute

    return deprecated_attribute(__name__, name, _OLD)
