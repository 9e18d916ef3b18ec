OTHER = {"validate": "helper", "protocols": "registry"}
