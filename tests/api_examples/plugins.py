OTHER = {"load": "registry", "loaded": "registry", "registered": "registry", "reset": "registry"}
