"""Example calls for the API tests: ``prompts`` (templates and rubrics; nothing here is a statistic)."""

OTHER = {
    "load_prompt": "prompt",
    "list_prompts": "prompt",
    "parse_prompt": "prompt",
    "load_rubric": "prompt",
    "list_rubrics": "prompt",
}
