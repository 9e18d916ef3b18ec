"""tables: writers of committed tables and their provenance sidecars; no statistics."""

OTHER = {
    "save_table": "writer", "format_number": "helper", "format_frame": "helper", "escape_markdown": "helper",
    "latex_escape": "helper", "spreadsheet_safe": "helper", "data_hash": "helper", "sidecar": "writer", "write_sidecar": "writer",
}
