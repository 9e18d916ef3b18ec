"""reStructuredText habits of medeval_kit's docstrings as the Markdown mkdocstrings renders (no griffe here,
so the tests need no docs extra). Used by the griffe extension `tools/docs_griffe.py`.

- Sphinx roles (``:func:`x```, ``:class:`~a.B```, ``:mod:``, ``:meth:``, ``:data:``, ``:attr:`` ...) become
  autorefs cross-references ``[`x`][medeval_kit.pkg.x]`` when ``resolve`` finds the target in the rendered
  API, and plain inline code ```x``` otherwise;
- ````double backticks```` become single-backtick code;
- ``>>>`` doctest blocks, ``::`` literal blocks and ``.. code-block::`` directives become fenced code;
  ``.. note::``-style directives become admonitions.
"""

from __future__ import annotations

import re
from collections.abc import Callable

ROLE = re.compile(
    r":(?:py:)?(?P<role>func|class|mod|meth|data|attr|obj|exc|const|any|ref|doc|term):"
    r"`(?P<body>[^`]+)`"
)
DOCTEST_FLAG = re.compile(r"\s*#\s*doctest:\s*[+-]\w+(?:\s*,\s*[+-]\w+)*\s*$")
DOUBLE = re.compile(r"``(?P<code>[^`]+?)``")
FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>```+|~~~+)")
DIRECTIVE = re.compile(r"^(?P<indent>\s*)\.\.\s+(?P<name>[a-zA-Z-]+)::\s*(?P<arg>.*)$")
ADMONITIONS = {"note", "warning", "tip", "important", "caution", "danger", "attention", "hint", "seealso", "todo"}
PLACEHOLDER = re.compile(r"^[ \t]*\{[A-Za-z_]\w*\}[ \t]*$", re.M)  # a shared description, filled at import
CODE_DIRECTIVES = {"code-block", "code", "sourcecode", "doctest"}

Resolver = Callable[[str, str], "str | None"]


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def role_markdown(role: str, body: str, resolve: Resolver | None) -> str:
    """One Sphinx role as Markdown: a cross-reference when ``resolve`` finds the target, else code."""
    body = " ".join(body.split())  # a role may be wrapped over two lines
    m = re.fullmatch(r"(?s)(?P<text>.*?)\s*<(?P<target>[^<>]+)>", body)
    if m and m.group("text"):
        text, target = m.group("text"), m.group("target")
    else:
        target = body
        text = None
    target = "".join(target.split())  # a dotted path has no spaces (wrapped at a dot)
    shorten = target.startswith("~")
    target = target.lstrip("~!").lstrip(".")
    if text is None:
        text = target.rsplit(".", 1)[-1] if shorten else target
    ident = resolve(role, target.removesuffix("()")) if resolve else None
    if ident:
        return f"[`{text}`][{ident}]"
    return f"`{text}`"


def rewrite_inline(line: str, resolve: Resolver | None = None) -> str:
    """Roles and ````double backticks```` in running text (a line or a paragraph)."""
    line = ROLE.sub(lambda m: role_markdown(m.group("role"), m.group("body"), resolve), line)
    return DOUBLE.sub(lambda m: f"`{m.group('code')}`", line)


def _block(lines: list[str], start: int, indent: int) -> int:
    """End (exclusive) of the block indented deeper than ``indent`` starting at ``start`` (blank lines
    inside it included, trailing blank lines excluded)."""
    end = last = start
    while end < len(lines) and (not lines[end].strip() or _indent(lines[end]) > indent):
        if lines[end].strip():
            last = end + 1
        end += 1
    return last


def _fenced(body: list[str], indent: str, lang: str = "") -> list[str]:
    body_indent = min((_indent(b) for b in body if b.strip()), default=0)
    return [f"{indent}```{lang}", *(indent + b[body_indent:] if b.strip() else "" for b in body), f"{indent}```"]


def rewrite_docstring(text: str, resolve: Resolver | None = None) -> str:
    """A reStructuredText-flavoured docstring as the Markdown mkdocstrings renders.

    ``resolve(role, target)`` returns the identifier of a rendered object (``medeval_kit.bias.position_bias``)
    or None; roles it resolves become ``[`text`][identifier]``, the others inline code.
    """
    lines = text.splitlines()
    out: list[str] = []
    prose: list[str] = []  # lines of running text, rewritten together: a role or code may span a line break

    def flush() -> None:
        if prose:
            out.extend(rewrite_inline("\n".join(prose), resolve).split("\n"))
            prose.clear()

    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        m = FENCE.match(line)
        if m:  # an existing Markdown fence: copy verbatim up to its end
            flush()
            close = re.compile(rf"^\s*{re.escape(m.group('fence')[0])}{{{len(m.group('fence'))},}}\s*$")
            out.append(line)
            i += 1
            while i < len(lines):
                out.append(lines[i])
                i += 1
                if close.match(out[-1]):
                    break
            continue
        if stripped.startswith(">>>"):  # a doctest block runs to the next blank line
            flush()
            end = i
            while end < len(lines) and lines[end].strip():
                end += 1
            block = [DOCTEST_FLAG.sub("", b) for b in lines[i:end]]
            out += _fenced(block, line[: _indent(line)], "pycon")
            i = end
            continue
        d = DIRECTIVE.match(line)
        if d:
            flush()
            name, indent = d.group("name").lower(), _indent(line)
            end = _block(lines, i + 1, indent)
            body = list(lines[i + 1 : end])
            while body and not body[0].strip():
                body.pop(0)
            pad = line[:indent]
            if name in CODE_DIRECTIVES:
                lang = d.group("arg").strip()
                out += _fenced(body, pad, lang if name != "doctest" else "pycon")
            elif name in ADMONITIONS:
                kind = "info" if name == "seealso" else name
                out.append(f"{pad}!!! {kind}")
                first = d.group("arg").strip()
                body_indent = min((_indent(b) for b in body if b.strip()), default=0)
                inner = [first, *([""] if body else [])] if first else []
                inner += [b[body_indent:] if b.strip() else "" for b in body]
                out += [f"{pad}    {b}" if b else "" for b in rewrite_inline("\n".join(inner), resolve).split("\n")]
            else:  # an unknown directive: keep its content as a literal block
                out += _fenced(body, pad) if body else []
            i = end
            continue
        if stripped.endswith("::") and not stripped.startswith(".."):
            # a literal block follows when the next non-blank line is indented deeper
            j = i + 1
            while j < len(lines) and not lines[j].strip():
                j += 1
            if j < len(lines) and _indent(lines[j]) > _indent(line):
                end = _block(lines, j, _indent(line))
                head = stripped[:-2].rstrip()
                if head:
                    prose.append(line.rstrip()[:-2].rstrip() + ("" if head.endswith(":") else ":"))
                flush()
                out.append("")
                out += _fenced(lines[j:end], line[: _indent(line)])
                i = end
                continue
        prose.append(line)
        i += 1
    flush()
    return "\n".join(out)
