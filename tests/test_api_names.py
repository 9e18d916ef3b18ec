"""One name, one meaning across the public API (the glossary's rules, checked on every signature).

- a model string (``provider/name``) is always the parameter ``model``, and ``model`` is always one;
- ``level`` is only the measurement level (nominal, ordinal, interval, ratio);
- a column is never a keyword of its own (``*_col``): tables are mapped once with ``columns=``;
- a reader of the user's file is ``read_<what>``; ``load_<name>`` only loads bundled data;
- one spelling: ``normalize``.
Names that still break a rule are listed in ``tests/api_debt/names.txt`` (``names <package>.<name>``).
"""

from __future__ import annotations

import inspect

from tests.api_surface import all_public, ratchet

LEVELS = (None, "nominal", "ordinal", "interval", "ratio")
PROVIDERS = ("local", "openai", "anthropic", "replay", "ollama", "vllm", "llamacpp", "stub")
NOT_MODELS = ("1pl", "2pl", "3pl", "4pl", "rasch", "grm", "gpcm")  # IRT families are a `family`


def _is_model_string(value) -> bool:
    """``provider/name``, e.g. ``local/smollm2-135m`` (a prompt template's ``judge/pairwise`` is not)."""
    return isinstance(value, str) and value.split("/", 1)[0] in PROVIDERS and "/" in value


def name_problems(name: str, obj) -> list[str]:
    short = name.split(".", 1)[1]
    out = []
    if short.startswith("user_") or short.startswith("load_") and short.endswith("_file"):
        out.append("a reader of the user's file is read_<what>")
    if "normalise" in short.lower():
        out.append("spell normalize")
    try:
        params = inspect.signature(obj).parameters
    except (TypeError, ValueError):
        return out
    for p in params.values():
        if p.name != "model" and _is_model_string(p.default):
            out.append(f"parameter {p.name!r} holds a model string: call it 'model'")
        if p.name == "model" and isinstance(p.default, str) and p.default.lower() in NOT_MODELS:
            out.append(f"'model' is an LLM (provider/name), not {p.default!r}")
        if p.name == "level" and p.default is not inspect.Parameter.empty and p.default not in LEVELS:
            out.append(f"'level' is the measurement level, not {p.default!r}")
        if p.name.endswith("_col"):
            out.append(f"column keyword {p.name!r}: take columns=")
    return out


def test_one_name_one_meaning():
    failing = {n: "; ".join(p) for n, o in all_public().items() if (p := name_problems(n, o))}
    problems = ratchet("names", failing)
    assert not problems, "\n".join(problems)


def test_the_rules_can_fail():
    def user_thing(path, *, judge="openai/gpt-4o", level="family", model="2pl", item_col="item"):
        pass

    found = " ".join(name_problems("x.user_thing", user_thing))
    for rule in ("read_<what>", "call it 'model'", "measurement level", "not '2pl'", "columns="):
        assert rule in found
    assert name_problems("x.read_thing", lambda path, *, model="local/smollm2-135m", level=None: 0) == []
