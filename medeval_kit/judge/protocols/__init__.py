"""One file per judge protocol, each registering its ``judge_<name>`` with ``@protocol``. Importing this
package imports every module in it, so a new protocol is one new file here (plus its template in
``prompts/judge/`` and a test); ``shuffled`` holds what the k-slot protocols share."""

import importlib
import pkgutil

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")
