"""Bounded reading for the format readers: size limits, streamed JSON lines, capped zip members, and
the last-resort guard that turns any failure into one located :class:`ReaderError`.

Limits (raise them for a legitimately large file):

* ``max_member_bytes`` - one member of an Inspect ``.eval`` zip, checked against the size its header
  declares *and* while inflating (a header that lies does not help); all members together may
  inflate to 8 times this. Default 512 MB, or ``MEDEVAL_MAX_MEMBER_MB``; CLI ``--max-member-mb``.
* ``max_json_bytes`` - a file parsed whole (a JSON document) and one line of a JSON-lines file.
  Default 256 MB, or ``MEDEVAL_MAX_JSON_MB``; CLI ``--max-json-mb``. JSON-lines files are streamed
  line by line, so their total size is not limited.
"""

from __future__ import annotations

import functools
import inspect
import io
import json
import os
import struct
import zipfile
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from medeval_kit.errors import DataFileError

__all__ = ["DEFAULT_MAX_JSON_MB", "DEFAULT_MAX_MEMBER_MB", "ReaderError", "guarded", "iter_json_lines",
           "json_limit", "member_limit", "parse_json", "read_file_bounded", "read_member"]

MB = 1 << 20
DEFAULT_MAX_MEMBER_MB = 512
DEFAULT_MAX_JSON_MB = 256
_TOTAL_FACTOR = 8  # all members of one zip together: 8 x the member limit
_CHUNK = 1 * MB
_ZSTD = 93  # zip compression method id of zstandard


class ReaderError(DataFileError):
    """A file in another tool's format cannot be read: names the file, the record and the field."""


def _limit(value: int | None, env: str, default_mb: int, what: str) -> int:
    if value is None:
        raw = os.environ.get(env)
        if raw is None:
            return default_mb * MB
        try:
            value = int(float(raw) * MB)
        except ValueError:
            raise ReaderError(f"{env}={raw!r}: expected a number of megabytes") from None
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ReaderError(f"{what} must be a positive number of bytes, got {value!r}")
    return value


def member_limit(value: int | None = None) -> int:
    """The zip member limit in bytes: ``value``, else ``MEDEVAL_MAX_MEMBER_MB``, else 512 MB."""
    return _limit(value, "MEDEVAL_MAX_MEMBER_MB", DEFAULT_MAX_MEMBER_MB, "max_member_bytes")


def json_limit(value: int | None = None) -> int:
    """The whole-JSON-file (and JSON line) limit in bytes: ``value``, else ``MEDEVAL_MAX_JSON_MB``, else 256 MB."""
    return _limit(value, "MEDEVAL_MAX_JSON_MB", DEFAULT_MAX_JSON_MB, "max_json_bytes")


def _mb(n: int) -> str:
    return f"{n / MB:.0f} MB" if n >= MB else f"{n} bytes"


# --------------------------------------------------------------------------- JSON
def parse_json(data: bytes | str, where: str, *, line: int | None = None) -> Any:
    """Parse one JSON document; every failure becomes a :class:`ReaderError` starting with ``where``.

    ``where`` is ``"FILE"`` or ``"FILE: member NAME"``; with ``line`` (a JSON-lines file) the errors
    read ``FILE: line N ...``.
    """
    at = f"{where}: line {line}" if line is not None else where
    try:
        text = data.decode("utf-8") if isinstance(data, (bytes, bytearray)) else data
    except UnicodeDecodeError as exc:
        raise ReaderError(f"{at}: not UTF-8 text (byte {exc.start}: {exc.reason}); is this the right file?") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        if line is not None:
            raise ReaderError(f"{at} is not valid JSON ({exc.msg}, column {exc.colno})") from None
        raise ReaderError(f"{at}: malformed JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
    except RecursionError:
        raise ReaderError(f"{at}: JSON nested too deeply (beyond Python's recursion limit) to be "
                          "a results file") from None
    except ValueError as exc:  # e.g. an integer of more than 4300 digits
        raise ReaderError(f"{at}: unreadable JSON value ({exc})") from None


def read_file_bounded(p: Path, limit: int) -> bytes:
    """The bytes of ``p``; a file larger than ``limit`` (``max_json_bytes``) is refused before reading."""
    size = p.stat().st_size
    if size > limit:
        raise ReaderError(f"{p}: {_mb(size)} is more than the limit for a JSON file parsed whole "
                          f"(max_json_bytes={limit}, {_mb(limit)}); raise it with max_json_bytes= / "
                          "--max-json-mb / MEDEVAL_MAX_JSON_MB if the file is genuine")
    with p.open("rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:  # grew while we looked
        raise ReaderError(f"{p}: more than max_json_bytes={limit}")
    return data


def iter_json_lines(p: Path, limit: int) -> Iterator[tuple[int, Any]]:
    """Yield ``(line number, parsed value)`` for each non-blank line of ``p``, one line in memory at a time.

    A line longer than ``limit`` bytes is refused; errors name the line.
    """
    with p.open("rb") as f:
        lineno = 0
        while True:
            line = f.readline(limit + 1)
            if not line:
                return
            lineno += 1
            if len(line) > limit and not line.endswith(b"\n"):
                raise ReaderError(f"{p}: line {lineno}: longer than max_json_bytes={limit} ({_mb(limit)}); "
                                  "raise it with max_json_bytes= / --max-json-mb if the file is genuine")
            if not line.strip():
                continue
            yield lineno, parse_json(line, str(p), line=lineno)


# --------------------------------------------------------------------------- zip members
class MemberReader:
    """Reads members of one zip with the per-member and total caps; errors name the member."""

    def __init__(self, zf: zipfile.ZipFile, raw, p: Path, limit: int) -> None:
        self.zf, self.raw, self.p, self.limit = zf, raw, p, limit
        self.total_left = _TOTAL_FACTOR * limit

    def _too_big(self, name: str, what: str) -> ReaderError:
        return ReaderError(f"{self.p}: member {name}: {what} more than max_member_bytes={self.limit} "
                           f"({_mb(self.limit)}); raise it with max_member_bytes= / --max-member-mb / "
                           "MEDEVAL_MAX_MEMBER_MB if the log is genuine")

    def read(self, name: str) -> bytes:
        """The inflated bytes of member ``name``, at most ``limit`` (declared and actual)."""
        info = self.zf.getinfo(name)
        if info.file_size > self.limit:
            raise self._too_big(name, f"declares {_mb(info.file_size)},")
        cap = min(self.limit, self.total_left)
        try:
            stream = self._open(name, info)
            buf = bytearray()
            with stream:
                while True:
                    chunk = stream.read(_CHUNK)
                    if not chunk:
                        break
                    buf += chunk
                    if len(buf) > cap:
                        if cap < self.limit:
                            raise ReaderError(f"{self.p}: member {name}: the members together inflate to more than "
                                              f"{_TOTAL_FACTOR} x max_member_bytes ({_mb(_TOTAL_FACTOR * self.limit)})")
                        raise self._too_big(name, "inflates to")
        except ReaderError:
            raise
        except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError, struct.error) as exc:
            raise ReaderError(f"{self.p}: member {name}: damaged zip data ({type(exc).__name__}: {exc}; "
                              "is the file truncated?)") from None
        except (NotImplementedError, RuntimeError) as exc:  # unknown method, encrypted
            raise ReaderError(f"{self.p}: member {name}: {exc} (zip method {info.compress_type})") from None
        except Exception as exc:  # zstandard.ZstdError and friends
            raise ReaderError(f"{self.p}: member {name}: cannot decompress ({type(exc).__name__}: {exc})") from None
        self.total_left -= len(buf)
        return bytes(buf)

    def _open(self, name: str, info: zipfile.ZipInfo):
        if info.compress_type != _ZSTD:
            return self.zf.open(info)
        try:
            import zstandard  # type: ignore[import-not-found]
        except ImportError:
            raise ReaderError(
                f"{self.p}: member {name} is zstd-compressed (written by a recent Inspect). Install inspect_ai "
                "(pip install 'medeval_kit[inspect]') or zstandard, or convert the log to JSON with "
                "`inspect log convert FILE --to json --output-dir DIR`") from None
        raw = self.raw
        raw.seek(info.header_offset)
        head = raw.read(30)
        if len(head) < 30 or struct.unpack("<I", head[:4])[0] != 0x04034B50:
            raise ReaderError(f"{self.p}: member {name}: bad local zip header (is the file truncated?)")
        n_name, n_extra = struct.unpack("<HH", head[26:30])
        raw.seek(info.header_offset + 30 + n_name + n_extra)
        data = raw.read(min(info.compress_size, self.limit + 1))
        return zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data), read_across_frames=True)


def read_member(zf: zipfile.ZipFile, raw, name: str, p: Path, limit: int) -> bytes:
    """One capped member read (see :class:`MemberReader`); for callers reading a single member."""
    return MemberReader(zf, raw, p, limit).read(name)


# --------------------------------------------------------------------------- the guard
def _convert(exc: BaseException, src: str) -> ReaderError:
    if isinstance(exc, RecursionError):
        return ReaderError(f"{src}: data nested too deeply to be a results file")
    if isinstance(exc, MemoryError):
        return ReaderError(f"{src}: out of memory while reading; the file (or a zip member) is too large for this "
                           "machine - lower max_member_bytes / max_json_bytes, or split the file")
    if isinstance(exc, UnicodeError):
        return ReaderError(f"{src}: not UTF-8 text ({exc}); is this the right file?")
    if isinstance(exc, (zipfile.BadZipFile, zlib.error, EOFError)):
        return ReaderError(f"{src}: damaged zip archive ({type(exc).__name__}: {exc}; is the file truncated?)")
    if isinstance(exc, OSError):
        return ReaderError(f"{src}: cannot read the file ({exc.strerror or exc})")
    return ReaderError(f"{src}: reader bug: unexpected {type(exc).__name__} ({exc}); the file has something "
                       "this reader does not check - please report it with the file")


def guarded(fn: Callable) -> Callable:
    """Decorate a reader ``fn(path, ...)``: any exception other than a ``MedevalError`` becomes a
    :class:`ReaderError` naming the file (arguments are bound first, so a wrong keyword stays a TypeError)."""
    sig = inspect.signature(fn)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        bound = sig.bind(*args, **kwargs)
        src = str(next(iter(bound.arguments.values()), "?"))
        from medeval_kit.errors import MedevalError

        try:
            return fn(*args, **kwargs)
        except MedevalError:
            raise
        except (KeyboardInterrupt, SystemExit, GeneratorExit):
            raise
        except BaseException as exc:  # noqa: BLE001 - last resort: one clear line, never a traceback
            raise _convert(exc, src) from None

    return wrapper
