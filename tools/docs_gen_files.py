"""mkdocs-gen-files script (`mkdocs.yml` -> plugins -> gen-files): writes the generated pages into the
virtual site during `make docs`; nothing is written into the checkout. The pages are made by
`tools/docs_reference.py`."""

from __future__ import annotations

import sys
from pathlib import Path

import mkdocs_gen_files

sys.path.insert(0, str(Path(__file__).resolve().parent))

import docs_reference as ref  # noqa: E402 - after the path above

# the pages written here are exactly ref.generated_pages() (the nav test relies on that list)
with mkdocs_gen_files.open("reference/cli.md", "w") as f:
    f.write(ref.cli_markdown())

with mkdocs_gen_files.open("reference/api/index.md", "w") as f:
    f.write(ref.api_index_markdown())
for slug in ref.API_PAGES:
    with mkdocs_gen_files.open(f"reference/api/{slug}.md", "w") as f:
        f.write(ref.api_page_markdown(slug))

page, copies = ref.gallery()
with mkdocs_gen_files.open("gallery.md", "w") as f:
    f.write(page)
for source, target in copies:
    with mkdocs_gen_files.open(target, "wb") as f:
        f.write(source.read_bytes())
