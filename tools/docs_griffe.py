"""Griffe extension of `make docs` (`mkdocs.yml`: mkdocstrings -> python -> options -> extensions).

When griffe has loaded ``medeval_kit`` it

- adds what static analysis cannot see: names of a rendered module's runtime ``__all__`` made at import time
  (``agreement.cohen_kappa`` ..., one function per registered coefficient), taken from the imported module;
- uses the runtime docstring where the source's has ``{name}`` lines filled at import (``shared_docs``);
- rewrites every docstring's reStructuredText into Markdown (`tools/docs_rst.py`): a Sphinx role becomes an
  autorefs cross-reference when its target is shown in the rendered API reference (:class:`ApiIndex`) and
  inline code otherwise, so `mkdocs build --strict` never meets a broken cross-reference.

The package sources are never edited.
"""

from __future__ import annotations

import importlib
import inspect
import sys
from collections.abc import Callable
from pathlib import Path

import griffe

sys.path.insert(0, str(Path(__file__).resolve().parent))

from docs_rst import PLACEHOLDER, Resolver, rewrite_docstring  # noqa: E402 - after the path above


class ApiIndex:
    """Which objects the rendered API shows, and under which identifier.

    ``blocks`` are the rendered mkdocstrings blocks ``(identifier, members or None)``
    (:func:`docs_reference.api_blocks`); ``redirects`` maps a public path rendered elsewhere to its
    identifier (:func:`docs_reference.shadowed_names`).
    """

    def __init__(self, pkg: griffe.Module, blocks: list[tuple[str, list[str] | None]],
                 redirects: dict[str, str] | None = None) -> None:
        self.pkg = pkg
        self.ids: set[str] = set()
        self.by_canonical: dict[str, str] = {}
        self.redirects = dict(redirects or {})
        for ident, members in blocks:
            self._add(ident, ident)
            obj = self.get(ident)
            if members is None:
                members = _public_members(obj) if obj is not None and (obj.is_module or _is_class(obj)) else []
            for name in members:
                self._add(f"{ident}.{name}", f"{ident}.{name}")
                member = self.get(f"{ident}.{name}")
                if member is not None and _is_class(member):
                    for member_name in _public_members(member):
                        self._add(f"{ident}.{name}.{member_name}", f"{ident}.{name}.{member_name}")

    def _add(self, ident: str, path: str) -> None:
        self.ids.add(ident)
        obj = self.get(path)
        canonical = _canonical(obj) if obj is not None else None
        if canonical:
            self.by_canonical.setdefault(canonical, ident)

    def get(self, path: str) -> griffe.Object | griffe.Alias | None:
        if not path.startswith(self.pkg.name + ".") and path != self.pkg.name:
            return None
        rel = path[len(self.pkg.name) + 1 :]
        try:
            return self.pkg[rel] if rel else self.pkg
        except (KeyError, griffe.AliasResolutionError, griffe.CyclicAliasError, ValueError):
            return None

    def _canonical_of(self, ident: str) -> str:
        obj = self.get(ident)
        return (_canonical(obj) if obj is not None else None) or ident

    def identifier(self, path: str) -> str | None:
        """The rendered identifier of ``path`` (itself, or the public name of its definition)."""
        if path in self.ids:
            return path
        if path in self.redirects:
            return self.redirects[path]
        obj = self.get(path)
        canonical = _canonical(obj) if obj is not None else None
        return self.by_canonical.get(canonical) if canonical else None

    def resolver(self, obj: griffe.Object) -> Resolver:
        """``resolve(role, target)`` in the scope of ``obj``: its class, module and packages, then the
        whole rendered API when exactly one rendered name ends with the target."""

        def resolve(role: str, target: str) -> str | None:
            if target.startswith(self.pkg.name + ".") or target == self.pkg.name:
                return self.identifier(target)
            scope: griffe.Object | None = obj if obj.is_class or obj.is_module else obj.parent
            while scope is not None:
                found = self.identifier(f"{scope.path}.{target}")
                if found:
                    return found
                scope = scope.parent
            if role == "mod":
                return None
            tail = "." + target
            hits = sorted(i for i in self.ids if i.endswith(tail))
            targets = {self._canonical_of(i) for i in hits}
            return hits[0] if len(targets) == 1 else None  # one object, maybe shown under several names

        return resolve


def _canonical(obj: griffe.Object | griffe.Alias) -> str | None:
    try:
        return obj.final_target.path if obj.is_alias else obj.path
    except (griffe.AliasResolutionError, griffe.CyclicAliasError):
        return None


def _is_class(obj: griffe.Object | griffe.Alias) -> bool:
    try:
        return obj.is_class
    except (griffe.AliasResolutionError, griffe.CyclicAliasError):
        return False


def _public_members(obj: griffe.Object | griffe.Alias) -> list[str]:
    """What mkdocstrings shows of a class or module given no member list: public names, and of a module
    only those defined there (an imported name is not rendered, so it is no link target)."""
    try:
        return [n for n, m in obj.members.items() if not n.startswith("_") and not (obj.is_module and m.is_alias)]
    except (griffe.AliasResolutionError, griffe.CyclicAliasError):
        return []


def _walk(obj: griffe.Object, seen: set[int]) -> list[griffe.Object]:
    found = []
    if id(obj) in seen:
        return found
    seen.add(id(obj))
    found.append(obj)
    for member in obj.members.values():
        if not member.is_alias:
            found += _walk(member, seen)
    return found


class MedevalDocstrings(griffe.Extension):
    """Add runtime-only exports of the rendered modules, then rewrite every docstring of the package."""

    def __init__(self, package: str = "medeval_kit") -> None:
        super().__init__()
        self.package = package

    def on_package(self, *, pkg: griffe.Module, loader: griffe.GriffeLoader, **kwargs: object) -> None:
        if pkg.name != self.package:
            return
        import docs_reference as ref

        blocks, redirects = [], {}
        for module in ref.api_modules():
            module_blocks = ref.api_blocks(module)
            self._add_runtime_members(pkg, module, module_blocks[0][1] or [])
            blocks += module_blocks
            redirects.update(ref.shadowed_names(module))
        index = ApiIndex(pkg, blocks, redirects)
        for obj in _walk(pkg, set()):
            if obj.docstring is not None and PLACEHOLDER.search(obj.docstring.value):
                obj.docstring.value = _runtime_docstring(obj) or obj.docstring.value
            if obj.docstring is not None and obj.docstring.value:
                obj.docstring.value = rewrite_docstring(obj.docstring.value, index.resolver(obj))

    def _add_runtime_members(self, pkg: griffe.Module, module: str, names: list[str]) -> None:
        """Members of ``module`` that exist only at runtime (made at import), as griffe objects."""
        static = pkg[module[len(pkg.name) + 1 :]] if module != pkg.name else pkg
        missing = [n for n in names if n not in static.members]
        if not missing:
            return
        runtime = importlib.import_module(module)
        docstring = static.docstring
        for name in missing:
            value = getattr(runtime, name)
            doc = inspect.getdoc(value) if callable(value) else None
            ds = (griffe.Docstring(doc, parser=docstring.parser, parser_options=docstring.parser_options)
                  if doc and docstring is not None else None)
            if inspect.isfunction(value):
                obj = griffe.Function(name, parameters=_parameters(value), docstring=ds)
            else:
                obj = griffe.Attribute(name, value=repr(value), docstring=ds)
            static.set_member(name, obj)
        if static.exports is not None:
            static.exports = list(dict.fromkeys([*map(str, static.exports), *names]))


def _runtime_docstring(obj: griffe.Object) -> str | None:
    """The docstring ``help()`` shows: ``{name}`` lines are filled at import (``medeval_kit.docstrings``)."""
    module = obj.module.path
    try:
        value = importlib.import_module(module)
        for part in obj.path[len(module) + 1 :].split("."):
            if part:
                value = getattr(value, part)
    except Exception:  # noqa: BLE001 - a module that does not import keeps its static docstring
        return None
    doc = inspect.getdoc(value)
    return doc if doc and not PLACEHOLDER.search(doc) else None


def _parameters(fn: Callable) -> griffe.Parameters:
    kinds = {
        inspect.Parameter.POSITIONAL_ONLY: griffe.ParameterKind.positional_only,
        inspect.Parameter.POSITIONAL_OR_KEYWORD: griffe.ParameterKind.positional_or_keyword,
        inspect.Parameter.VAR_POSITIONAL: griffe.ParameterKind.var_positional,
        inspect.Parameter.KEYWORD_ONLY: griffe.ParameterKind.keyword_only,
        inspect.Parameter.VAR_KEYWORD: griffe.ParameterKind.var_keyword,
    }
    params = []
    for p in inspect.signature(fn).parameters.values():
        default = None if p.default is inspect.Parameter.empty else repr(p.default)
        params.append(griffe.Parameter(p.name, kind=kinds[p.kind], default=default))
    return griffe.Parameters(*params)
