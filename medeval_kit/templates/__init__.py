"""Files that ``medeval init`` copies into a new project (``project/``)."""
