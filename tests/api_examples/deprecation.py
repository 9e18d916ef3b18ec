OTHER = {"deprecated_alias": "helper", "deprecated_attribute": "helper"}
