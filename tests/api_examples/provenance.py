"""provenance: the run context that saved tables and figures record; no statistics."""

OTHER = {"start": "helper", "current": "helper", "reset": "helper", "runner_context": "helper"}
