"""Example calls for the API tests: ``paths`` (locations; nothing here is a statistic)."""

OTHER = {name: "helper" for name in (
    "root", "find_project", "toolkit_home", "package_resource", "resource", "data_dir", "prompts_dir",
    "prices_path", "published_dir", "notebooks_dir", "example_studies_dir", "studies_dir", "cache_path",
    "project_settings")}
