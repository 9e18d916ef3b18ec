"""Example calls for the API tests: ``json_schema`` (the JSON Schema validator; nothing here is a statistic)."""

OTHER = {"preload": "helper", "validator_class": "helper"}
