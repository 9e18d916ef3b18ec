OTHER = {"apply_columns": "helper", "takes_columns": "helper", "known_columns": "helper", "column_roles": "helper"}
