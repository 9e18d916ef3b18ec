OTHER = {"shared_docs": "helper"}
