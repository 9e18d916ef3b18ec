"""Tests for medeval_kit.prompts: template format, render errors, polarity, rubrics."""

from __future__ import annotations

import pytest

from medeval_kit.errors import MedevalError
from medeval_kit.paths import prompts_dir
from medeval_kit.prompts import (
    Prompt,
    PromptError,
    list_prompts,
    list_rubrics,
    load_prompt,
    load_rubric,
    parse_prompt,
)

GOOD = """---
name: t/demo
version: 2
description: demo
variables: [question, answer]
schema:
  type: object
  properties: {verdict: {enum: [A, B]}}
  required: [verdict]
owner: me
---
## system
Sys {{question}}

## user
Q: {{ question }} A: {{answer}} literal {{{{x}}}} and {"json": 1}
"""


def test_parse_and_render():
    p = parse_prompt(GOOD, path="demo.md")
    assert isinstance(p, Prompt)
    assert (p.name, p.version, p.variables, p.polarity) == ("t/demo", "2", ("question", "answer"), "normal")
    assert p.schema["required"] == ["verdict"]
    assert p.meta == {"owner": "me"}  # unknown front-matter keys are kept
    msgs = p.render(question="why?", answer="{{question}}")
    assert msgs == [
        {"role": "system", "content": "Sys why?"},
        # the value "{{question}}" is NOT re-expanded; {{{{x}}}} is a literal {{x}}
        {"role": "user", "content": 'Q: why? A: {{question}} literal {{x}} and {"json": 1}'},
    ]


def test_missing_and_extra_variable_name_file_and_variable():
    p = parse_prompt(GOOD, path="prompts/t/demo.md")
    with pytest.raises(PromptError, match=r"prompts/t/demo.md.*missing.*'answer'"):
        p.render(question="q")
    with pytest.raises(PromptError, match=r"prompts/t/demo.md.*unexpected.*'colour'"):
        p.render(question="q", answer="a", colour="red")
    assert issubclass(PromptError, MedevalError)


@pytest.mark.parametrize("text, match", [
    ("no front matter", "must start with"),
    ("---\nname: x\n## user\nhi", "not closed"),
    ("---\nname: x\nvariables: [a]\n---\n## user\nhello", "never used"),
    ("---\nname: x\nvariables: []\n---\n## user\nhello {{b}}", "not declared"),
    ("---\nname: x\n---\nno sections", "## user"),
    ("---\nname: x\n---\n## user\nu\n## system\ns", "## user"),
    ("---\nname: x\npolarity: upside\n---\n## user\nu", "polarity"),
    ("---\nname: x\nschema: {type: 12}\n---\n## user\nu", "not a valid JSON schema"),
    ("---\n: [\n---\n## user\nu", "not valid YAML"),
])
def test_malformed_templates(text, match):
    with pytest.raises(PromptError, match=match):
        parse_prompt(text, path="bad.md")


def test_user_only_template_has_no_system_message():
    p = parse_prompt("---\nname: x\nvariables: [q]\n---\n## user\nAsk {{q}}")
    assert p.render(q="1") == [{"role": "user", "content": "Ask 1"}]


def test_project_prompts_override_and_unknown_template(tmp_path, monkeypatch):
    """A user's project (MEDEVAL_ROOT) with its own prompts/ folder is used instead of ours."""
    (tmp_path / "prompts" / "g").mkdir(parents=True)
    (tmp_path / "prompts" / "g" / "one.md").write_text(GOOD)
    monkeypatch.setenv("MEDEVAL_ROOT", str(tmp_path))
    assert prompts_dir() == tmp_path / "prompts"
    assert list_prompts() == ["g/one"]
    assert load_prompt("g/one").name == "t/demo"
    with pytest.raises(PromptError, match="g/two.*does not exist.*g/one"):
        load_prompt("g/two")


def test_shipped_judge_templates_render():
    names = list_prompts("judge")
    for n in ["judge/pairwise", "judge/pairwise_reversed", "judge/pairwise_multi", "judge/rubric", "judge/multi_answer",
              "judge/reference", "judge/multi_response", "judge/pairwise_mec"]:
        assert n in names
        p = load_prompt(n)
        msgs = p.render(**{v: f"<{v}>" for v in p.variables})
        assert msgs[-1]["role"] == "user"
        for v in p.variables:  # every declared variable lands in the text
            assert f"<{v}>" in "".join(m["content"] for m in msgs)


def test_reversed_polarity_marked():
    assert load_prompt("judge/pairwise").polarity == "normal"
    rev = load_prompt("judge/pairwise_reversed")
    assert rev.polarity == "reversed" and rev.reversed
    lf = load_rubric("longform")
    assert set(lf.reversed_criteria) == {"harmfulness", "bias"}
    assert lf.criteria == ("correctness", "helpfulness", "harmfulness", "reasoning", "efficiency", "bias")


def test_mcqg_rubric_has_5_components_and_30_aspects():
    r = load_rubric("mcqg_srefine")
    assert r.kind == "pointwise"
    sizes = {c.id: len(c.aspects) for c in r.components}
    # 9 context + 5 question + 5 answer + 7 distractors + 4 reasoning = 30 (seed-000 Table 21)
    assert sizes == {"context": 9, "question": 5, "correct_answer": 5, "distractors": 7, "reasoning": 4}
    assert len(r.aspects) == 30
    assert all((a.min, a.max) == (1, 5) for a in r.aspects)
    assert r.component("distractors").max_score == 35  # the paper's "29/35"
    df = r.to_frame()
    assert list(df.columns) == ["component", "aspect", "description", "min", "max", "polarity"]
    assert "mcqg_srefine" in list_rubrics()


def test_bad_rubric(tmp_path):
    (tmp_path / "rubrics").mkdir()
    (tmp_path / "rubrics" / "dup.yaml").write_text("criteria: [{id: a}, {id: a}]\n")
    (tmp_path / "rubrics" / "pol.yaml").write_text("criteria: [{id: a, polarity: sideways}]\n")
    (tmp_path / "rubrics" / "empty.yaml").write_text("name: x\n")
    with pytest.raises(PromptError, match="repeated"):
        load_rubric("dup", root=tmp_path)
    with pytest.raises(PromptError, match="polarity"):
        load_rubric("pol", root=tmp_path)
    with pytest.raises(PromptError, match="components"):
        load_rubric("empty", root=tmp_path)
    with pytest.raises(PromptError, match="does not exist"):
        load_rubric("nope", root=tmp_path)


@pytest.mark.parametrize("value", [
    "\x00LBRACE\x00", "\x00RBRACE\x00", "\x00LBRACE\x00x\x00RBRACE\x00",  # the template's internal sentinels
    "{", "}", "{{", "}}", "{{{{", "}}}}", "{answer}", "{{answer}}", "{{{{answer}}}}", "\\1 \\g<0>",
])
def test_render_inserts_any_value_verbatim(value):
    """Issue 20 finding 9: a value holding the brace sentinel came out as '{{'; values are never re-read."""
    p = parse_prompt(GOOD)
    user = p.render(question=value, answer="ans")[1]["content"]
    assert user == f"Q: {value} A: ans literal {{{{x}}}} and {{\"json\": 1}}"
    assert p.render(question="q", answer=value)[0]["content"] == "Sys q"


def test_prompts_dir_is_one_public_name_in_paths():
    from medeval_kit import paths, prompts

    assert "prompts_dir" not in prompts.__all__
    with pytest.warns(DeprecationWarning, match="paths.prompts_dir"):
        assert prompts.prompts_dir() == paths.prompts_dir()
