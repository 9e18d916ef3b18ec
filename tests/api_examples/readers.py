"""Example calls for the API tests: ``readers`` (other tools' files read into tidy tables; no statistics).

A :class:`~medeval_kit.readers.ReadResult` carries tables and counts, not statistics: the readers are of
kind ``reader``.
"""

OTHER = {
    "read_alpaca_eval": "reader",
    "read_format": "reader",
    "read_healthbench_meta": "reader",
    "read_inspect": "reader",
    "read_mtbench": "reader",
    "read_mtbench_human": "reader",
    "read_promptfoo": "reader",
    "read_tidy": "reader",
    "read_for_command": "reader",
    "add_from_option": "helper",
}
