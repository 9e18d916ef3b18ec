"""apps: data access for the marimo apps (uploads, column mapping, bundled views); one statistic."""

from medeval_kit import apps

EXAMPLES = {
    "position_summary": lambda t: apps.position_summary(t.judgments, judge="j1", criterion="overall", n_boot=50),
}

OTHER = {
    "annotations_from_table": "reader",
    "app_data": "reader",
    "app_table": "reader",
    "attempt": "helper",
    "check_mapping": "helper",
    "cli_usage": "helper",
    "data_request": "reader",
    "flip_summary_markdown": "helper",
    "flip_table": "helper",
    "guess_mapping": "helper",
    "item_component_shares": "helper",
    "judgments_from_table": "reader",
    "load_annotations_for_app": "reader",
    "load_judgments_for_app": "reader",
    "load_rounds_for_app": "reader",
    "mapping_form": "helper",
    "mapping_markdown": "helper",
    "notes_markdown": "helper",
    "pair_markdown": "helper",
    "problem_callout": "helper",
    "read_upload": "reader",
    "read_user_file": "reader",
    "response_markdown": "helper",
    "roles_markdown": "helper",
    "round_rows": "helper",
    "round_texts": "helper",
    "round_trajectory": "helper",
    "rounds_from_table": "reader",
    "rule_stop": "helper",
    "shown_text": "helper",
    "stop_on_problem": "helper",
    "table_note": "helper",
    "unknown_verdicts": "helper",
}
