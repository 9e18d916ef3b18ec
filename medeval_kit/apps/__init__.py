"""Data access for the marimo apps in notebooks/, kept here so tests reach it without marimo: the user's
uploaded file and its column mapping (``upload``), where the data comes from: an upload, a ``--data``
file on the command line or a bundled dataset (``source``), and the bundled datasets and per-item views
(``bundled``). This is the top layer, beside ``cli``."""

from .bundled import *  # noqa: F401,F403
from .bundled import __all__ as _bundled_all
from .source import *  # noqa: F401,F403
from .source import __all__ as _source_all
from .upload import *  # noqa: F401,F403
from .upload import __all__ as _upload_all

__all__ = [*_upload_all, *_source_all, *_bundled_all]


def __getattr__(name: str):
    from medeval_kit.deprecation import deprecated_attribute

    from . import source

    return deprecated_attribute(__name__, name, {"user_data": ("apps.app_data", source.app_data)})
