"""Content-addressed record/replay cache in SQLite (WAL mode, safe for several processes).

One row per successful call: the canonical request, raw text, raw provider response, usage,
cost, latency and time. Errors are never stored. No API key ever reaches this file: requests
hold no credentials and provider responses are stored as returned.

Modes: ``off`` (no read, no write), ``use`` (read and write; default), ``replay`` (read only;
a miss is an error listing the missing requests) and ``refresh`` (never read; overwrite).

Leases (table ``leases``: key, owner, expiry): in ``use`` mode, a request takes a lease on its key
just before it is sent, so that processes sharing the cache never pay twice for one request. An owner
is a random token per run (see :meth:`Cache.lease_owner`). Another process finding the lease held
waits for the stored result, or takes the lease over once it has expired (or its owner is proven gone:
same kernel boot, same PID namespace, no such pid). The holder renews its leases while it works and
re-takes a lease (``take_leases`` again: it stays ``mine`` only if nobody took it over) before
sending when its last renewal may have run out, so a paused holder, or one in another PID namespace,
never sends a request another process has taken over (see :mod:`medeval_kit.llm.leases`). The table is
created on the first lease, so reading a cache (replay, all hits) never changes the file.

Endpoint options (table ``endpoint_options``: endpoint, option, value): what a provider found out about
a server for an option left to ``"auto"`` (the ``schema_format`` an OpenAI-compatible server accepts),
so a new client keys and sends its requests the same way without probing again. Created on the first
write, like the leases.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from medeval_kit import paths

from .errors import LLMError

MODES = ("off", "use", "replay", "refresh")
BUSY_TIMEOUT_MS = 60000  # how long a write waits for another process's write lock

# Numbered migrations (PRAGMA user_version = index of the last one applied).
MIGRATIONS: list[str] = [
    """
    CREATE TABLE IF NOT EXISTS responses (
        key TEXT PRIMARY KEY,
        provider TEXT NOT NULL,
        model TEXT NOT NULL,
        request_json TEXT NOT NULL,
        text TEXT,
        raw_json TEXT,
        prompt_tokens INTEGER NOT NULL DEFAULT 0,
        completion_tokens INTEGER NOT NULL DEFAULT 0,
        cost_usd REAL,
        latency_s REAL,
        finish_reason TEXT,
        response_id TEXT,
        source TEXT NOT NULL DEFAULT 'live',
        created_utc TEXT NOT NULL
    );
    CREATE INDEX IF NOT EXISTS responses_model ON responses(provider, model);
    CREATE TABLE IF NOT EXISTS batches (
        batch_id TEXT PRIMARY KEY,
        provider TEXT NOT NULL,
        model TEXT NOT NULL,
        base_url TEXT,
        status TEXT NOT NULL,
        keys_json TEXT NOT NULL,
        n INTEGER NOT NULL,
        detail_json TEXT,
        created_utc TEXT NOT NULL,
        updated_utc TEXT NOT NULL
    );
    """,
]

_COLS = ("key", "provider", "model", "request_json", "text", "raw_json", "prompt_tokens",
         "completion_tokens", "cost_usd", "latency_s", "finish_reason", "response_id", "source",
         "created_utc")
_CREATED, _SOURCE = _COLS.index("created_utc"), _COLS.index("source")
_JSON_COLS = (_COLS.index("request_json"), _COLS.index("raw_json"))


def _boot_id() -> str:
    """This kernel's boot id ('' when unknown): tells machines and reboots apart."""
    global _BOOT_ID
    if _BOOT_ID is None:
        try:
            _BOOT_ID = Path("/proc/sys/kernel/random/boot_id").read_text().strip().replace("|", "")
        except OSError:
            _BOOT_ID = ""
    return _BOOT_ID


def _pid_namespace() -> str:
    """This process's PID namespace (``pid:[inode]``; '' when unknown): a pid means one process only
    within its namespace."""
    try:
        return os.readlink("/proc/self/ns/pid").replace("|", "")
    except OSError:
        return ""


_BOOT_ID: str | None = None


def connect_wal(path: Path) -> sqlite3.Connection:
    """Open ``path`` (creating its folder) in autocommit mode with WAL journaling and a 60 s busy timeout.

    The one way the LLM layer opens its database (the cache, its leases and the run ledger share it), so
    that every process sharing the file uses the same settings.

    Parameters
    ----------
    path : Path
        The SQLite file.

    Returns
    -------
    sqlite3.Connection
        Usable from any thread (the caller serialises access).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False)
    conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    for attempt in range(50):  # switching to WAL needs a moment of exclusive access
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            break
        except sqlite3.OperationalError:
            time.sleep(0.05 * (attempt + 1))
    return conn


def default_cache_path() -> Path:
    """Return the project's cache file.

    Returns
    -------
    Path
        ``<project>/data/cache/llm.sqlite`` (:func:`medeval_kit.paths.cache_path`; the project is
        ``$MEDEVAL_ROOT``, else the nearest folder at or above the current one holding ``medeval.toml``).
    """
    return paths.cache_path()


_SECOND: tuple[int, str] = (-1, "")  # the last whole second formatted by utcnow, and its text


def utcnow() -> str:
    """Return the current UTC time as stored in the cache (ISO 8601, microseconds, ``Z``)."""
    global _SECOND
    us = time.time_ns() // 1000
    sec, frac = divmod(us, 1_000_000)
    last = _SECOND
    if last[0] != sec:  # strftime once per second, not once per reply
        last = _SECOND = (sec, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(sec)))
    return f"{last[1]}.{frac:06d}Z"


class Cache:
    """The SQLite response cache: every reply is kept under a key of everything that shapes it.

    The key covers the model string, messages, sampling parameters, schema, repeat and the provider
    options that change the reply; metadata is not in it. Several processes may share one file: a lease
    on each request makes sure only one of them pays for it.

    Parameters
    ----------
    path : path-like, optional
        The SQLite file (created with its folder); default :func:`default_cache_path`.
    mode : {"use", "off", "replay", "refresh"}, default "use"
        How the client uses it (see :func:`get_client`).
    """

    def __init__(self, path: str | os.PathLike | None = None, mode: str = "use") -> None:
        if mode not in MODES:
            raise LLMError(f"cache mode {mode!r} is unknown: use one of {', '.join(MODES)}")
        self.mode = mode
        self.path = Path(path) if path is not None else default_cache_path()
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        self._pid = None
        self._leases_pid = None

    # ------------------------------------------------------------------ connection
    @property
    def reads(self) -> bool:
        return self.mode in ("use", "replay")

    @property
    def writes(self) -> bool:
        return self.mode in ("use", "refresh")

    def _connect(self) -> sqlite3.Connection:
        if self._conn is not None and self._pid == os.getpid():
            return self._conn
        conn = connect_wal(self.path)
        conn.execute("PRAGMA synchronous=NORMAL")  # durable across process crashes in WAL mode
        self._migrate(conn)
        self._conn, self._pid = conn, os.getpid()
        return conn

    def _migrate(self, conn: sqlite3.Connection) -> None:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version >= len(MIGRATIONS):
            return
        conn.execute("BEGIN IMMEDIATE")
        try:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            for i in range(version, len(MIGRATIONS)):
                for stmt in MIGRATIONS[i].split(";"):
                    if stmt.strip():
                        conn.execute(stmt)
            conn.execute(f"PRAGMA user_version={len(MIGRATIONS)}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def now_or_never(self, fn, *args: Any) -> tuple[bool, Any]:
        """Run ``fn(*args)`` (an idempotent write of this cache) only if it needs no wait, for a caller that
        must not block (the event loop): the connection is open in this process and free, and no other
        process holds the database's write lock.

        Returns
        -------
        tuple of (bool, object)
            ``(True, result)``, or ``(False, None)`` when it would have had to wait or failed (anything
            ``fn`` did may then be partly committed: run it again, where waiting is fine).
        """
        if self._conn is None or self._pid != os.getpid() or not self._lock.acquire(blocking=False):
            return False, None
        try:
            conn = self._conn
            try:
                conn.execute("PRAGMA busy_timeout=0")
                return True, fn(*args)
            except Exception:
                return False, None
            finally:
                try:
                    conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
                except Exception:  # never keep a connection that would not wait: the next use reopens it
                    self._conn = None
                    try:
                        conn.close()
                    except Exception:
                        pass
        finally:
            self._lock.release()

    def autocheckpoint(self, pages: int) -> None:
        """Set this connection's WAL auto-checkpoint (``PRAGMA wal_autocheckpoint``; 0: never, SQLite's
        default 1000 pages), e.g. off while a run's writer checkpoints from its own thread."""
        with self._lock:
            self._connect().execute(f"PRAGMA wal_autocheckpoint={int(pages)}")

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self) -> Cache:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Cache({str(self.path)!r}, mode={self.mode!r})"

    # ------------------------------------------------------------------ read / write
    def get_many(self, keys: Iterable[str]) -> dict[str, dict[str, Any]]:
        """Rows for the keys that are present (one query per 500 keys)."""
        keys = list(dict.fromkeys(keys))
        out: dict[str, dict[str, Any]] = {}
        if not keys or (not self.path.exists() and self._conn is None):
            return out
        with self._lock:
            conn = self._connect()
            cols = ",".join(_COLS)
            for i in range(0, len(keys), 500):
                chunk = keys[i:i + 500]
                q = f"SELECT {cols} FROM responses WHERE key IN ({','.join('?' * len(chunk))})"
                for row in conn.execute(q, chunk):
                    out[row[0]] = dict(zip(_COLS, row))
        return out

    def get(self, key: str) -> dict[str, Any] | None:
        return self.get_many([key]).get(key)

    def __contains__(self, key: str) -> bool:
        return self.get(key) is not None

    def __len__(self) -> int:
        if not self.path.exists():
            return 0
        with self._lock:
            return self._connect().execute("SELECT COUNT(*) FROM responses").fetchone()[0]

    def put(self, entry: dict[str, Any]) -> None:
        """Store one successful call (replaces an existing row with the same key)."""
        self.put_many([entry])

    def put_many(self, entries: list[dict[str, Any]]) -> None:
        if not entries:
            return
        rows = []
        for e in entries:
            row = [e.get(c) for c in _COLS]
            if "created_utc" not in e:
                row[_CREATED] = utcnow()
            if "source" not in e:
                row[_SOURCE] = "live"
            for i in _JSON_COLS:
                if row[i] is not None and not isinstance(row[i], str):
                    row[i] = json.dumps(row[i], ensure_ascii=False, default=str)
            rows.append(row)
        q = f"INSERT OR REPLACE INTO responses ({','.join(_COLS)}) VALUES ({','.join('?' * len(_COLS))})"
        with self._lock:
            conn = self._connect()
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.executemany(q, rows)
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise

    def iter_entries(self, *, model: str | None = None, keys: Iterable[str] | None = None
                     ) -> Iterator[dict[str, Any]]:
        """Stored rows, optionally for one ``provider/name`` or a set of keys."""
        if not self.path.exists():
            return
        where, args = [], []
        if model:
            prov, _, name = model.partition("/")
            where.append("provider=? AND model=?")
            args += [prov, name]
        q = f"SELECT {','.join(_COLS)} FROM responses"
        if where:
            q += " WHERE " + " AND ".join(where)
        q += " ORDER BY created_utc, key"
        wanted = set(keys) if keys is not None else None
        with self._lock:
            rows = self._connect().execute(q, args).fetchall()
        for row in rows:
            if wanted is None or row[0] in wanted:
                yield dict(zip(_COLS, row))

    # ------------------------------------------------------------------ leases
    def _leases_conn(self) -> sqlite3.Connection:
        conn = self._connect()
        if self._leases_pid != os.getpid():
            conn.execute("CREATE TABLE IF NOT EXISTS leases (key TEXT PRIMARY KEY, owner TEXT NOT NULL, "
                         "expires REAL NOT NULL)")
            self._leases_pid = os.getpid()
        return conn

    @staticmethod
    def lease_owner(tag: str, pid: int | None = None) -> str:
        """An owner id ``tag|boot|pidns|pid``: the run's random ``tag`` is what owns a lease; the boot id
        of the kernel and the PID namespace only let a lease of a process proven gone be freed early.

        Parameters
        ----------
        tag : str
            A random token, one per run.
        pid : int, optional
            The owning process (default: this one), in this process's PID namespace.

        Returns
        -------
        str
        """
        return f"{tag}|{_boot_id()}|{_pid_namespace()}|{os.getpid() if pid is None else int(pid)}"

    @staticmethod
    def _owner_alive(owner: str) -> bool:
        """False only when the owner provably no longer runs: same kernel boot and same PID namespace as
        this process (so its pid means the same process here) and no process has that pid. Anything else
        (another namespace or machine, an unknown form such as an older ``host|pid|tag``) is alive: only
        its expiry frees the lease. A reused pid only makes a dead owner look alive, which is safe."""
        parts = owner.split("|")
        if len(parts) != 4 or not parts[3].isdigit():
            return True
        boot, ns, pid = parts[1], parts[2], int(parts[3])
        if not boot or not ns or boot != _boot_id() or ns != _pid_namespace():
            return True
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except OSError:  # e.g. PermissionError: the process exists
            return True
        return True

    def _lease_rows(self, conn: sqlite3.Connection, keys: list[str]
                    ) -> tuple[dict[str, dict[str, Any]], dict[str, tuple[str, float]]]:
        rows: dict[str, dict[str, Any]] = {}
        held: dict[str, tuple[str, float]] = {}
        for i in range(0, len(keys), 500):
            chunk = keys[i:i + 500]
            marks = ",".join("?" * len(chunk))
            for row in conn.execute(f"SELECT {','.join(_COLS)} FROM responses WHERE key IN ({marks})", chunk):
                rows[row[0]] = dict(zip(_COLS, row))
            for k, owner, expires in conn.execute(f"SELECT key, owner, expires FROM leases WHERE key IN ({marks})",
                                                  chunk):
                held[k] = (owner, expires)
        return rows, held

    def _lease_free(self, lease: tuple[str, float] | None, owner: str, now: float) -> bool:
        return lease is None or lease[0] == owner or lease[1] < now or not self._owner_alive(lease[0])

    def take_leases(self, keys: Iterable[str], owner: str, ttl: float = 60.0
                    ) -> dict[str, tuple[str, Any]]:
        """Try to lease ``keys`` for ``owner`` for ``ttl`` seconds, in one transaction.

        Returns, per key, ``("done", row)`` when a response is already stored (no lease is taken),
        ``("mine", None)`` when ``owner`` now holds the lease until ``ttl`` from now (a free, expired or
        orphaned lease is taken over; a lease ``owner`` still holds is extended: the fencing check
        before a send), or ``("held", other_owner)``.
        """
        keys = list(dict.fromkeys(keys))
        out: dict[str, tuple[str, Any]] = {}
        if not keys:
            return out
        with self._lock:
            conn = self._leases_conn()
            conn.execute("BEGIN IMMEDIATE")
            try:
                now = time.time()
                rows, held = self._lease_rows(conn, keys)
                grab = []
                for k in keys:
                    if k in rows:
                        out[k] = ("done", rows[k])
                    elif self._lease_free(held.get(k), owner, now):
                        grab.append((k, owner, now + ttl))
                        out[k] = ("mine", None)
                    else:
                        out[k] = ("held", held[k][0])
                conn.executemany("INSERT OR REPLACE INTO leases (key, owner, expires) VALUES (?,?,?)", grab)
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        return out

    def poll_leases(self, keys: Iterable[str], owner: str) -> dict[str, tuple[str, Any]]:
        """Read-only: per key ``("done", row)``, ``("free", None)`` (the lease is released, expired or
        orphaned) or ``("held", other_owner)``."""
        keys = list(dict.fromkeys(keys))
        if not keys:
            return {}
        with self._lock:
            rows, held = self._lease_rows(self._leases_conn(), keys)
        now = time.time()
        return {k: ("done", rows[k]) if k in rows else ("free", None)
                if self._lease_free(held.get(k), owner, now) else ("held", held[k][0]) for k in keys}

    def renew_leases(self, owner: str, ttl: float = 60.0) -> int:
        """Push back the expiry of every lease ``owner`` holds; return how many."""
        with self._lock:
            cur = self._leases_conn().execute("UPDATE leases SET expires=? WHERE owner=?", (time.time() + ttl, owner))
            return cur.rowcount

    def release_leases(self, owner: str, keys: Iterable[str] | None = None) -> None:
        """Release ``owner``'s leases on ``keys`` (all of them when None)."""
        with self._lock:
            conn = self._leases_conn()
            if keys is None:
                conn.execute("DELETE FROM leases WHERE owner=?", (owner,))
                return
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.executemany("DELETE FROM leases WHERE key=? AND owner=?", [(k, owner) for k in keys])
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise

    # ------------------------------------------------------------------ endpoint options
    def endpoint_options(self, endpoint: str) -> dict[str, str]:
        """The options found for ``endpoint`` (``provider/name@base_url``); {} when none are stored."""
        if not self.path.exists() and self._conn is None:
            return {}
        with self._lock:
            conn = self._connect()
            table = "SELECT 1 FROM sqlite_master WHERE type='table' AND name='endpoint_options'"
            if conn.execute(table).fetchone() is None:
                return {}
            rows = conn.execute("SELECT option, value FROM endpoint_options WHERE endpoint=?", (endpoint,)).fetchall()
        return dict(rows)

    def set_endpoint_option(self, endpoint: str, option: str, value: str) -> None:
        """Store what was found for ``option`` of ``endpoint`` (replaces an earlier finding)."""
        with self._lock:
            conn = self._connect()
            conn.execute("CREATE TABLE IF NOT EXISTS endpoint_options (endpoint TEXT NOT NULL, option TEXT NOT NULL, "
                         "value TEXT NOT NULL, updated_utc TEXT NOT NULL, PRIMARY KEY (endpoint, option))")
            conn.execute("INSERT OR REPLACE INTO endpoint_options (endpoint, option, value, updated_utc) "
                         "VALUES (?,?,?,?)", (endpoint, option, value, utcnow()))

    # ------------------------------------------------------------------ maintenance
    def stats(self):
        """A DataFrame: one row per provider/model with n, tokens, cost and first/last times."""
        import pandas as pd

        cols = ["provider", "model", "n", "prompt_tokens", "completion_tokens", "cost_usd",
                "first_utc", "last_utc"]
        if not self.path.exists():
            return pd.DataFrame(columns=cols)
        q = ("SELECT provider, model, COUNT(*), SUM(prompt_tokens), SUM(completion_tokens), "
             "SUM(cost_usd), MIN(created_utc), MAX(created_utc) FROM responses "
             "GROUP BY provider, model ORDER BY provider, model")
        with self._lock:
            rows = self._connect().execute(q).fetchall()
        return pd.DataFrame(rows, columns=cols)

    def export(self, path: str | os.PathLike, *, model: str | None = None) -> int:
        """Write entries as JSON Lines; return how many."""
        n = 0
        with open(path, "w", encoding="utf-8") as fh:
            for e in self.iter_entries(model=model):
                e = dict(e)
                e["request"] = json.loads(e.pop("request_json"))
                e["raw"] = json.loads(e.pop("raw_json")) if e.get("raw_json") else None
                fh.write(json.dumps(e, ensure_ascii=False) + "\n")
                n += 1
        return n

    def prune(self, *, older_than_days: float | None = None, model: str | None = None,
              keep_keys: Iterable[str] | None = None, dry_run: bool = False) -> int:
        """Delete entries (older than N days, of one model, and/or not in ``keep_keys``).

        With no criterion nothing is deleted. Returns the number of rows (that would be) deleted.
        """
        if older_than_days is None and model is None and keep_keys is None:
            return 0
        if not self.path.exists():
            return 0
        where, args = [], []
        if older_than_days is not None:
            cutoff = (datetime.now(timezone.utc) - timedelta(days=float(older_than_days)))
            where.append("created_utc < ?")
            args.append(cutoff.strftime("%Y-%m-%dT%H:%M:%S.%fZ"))
        if model:
            prov, _, name = model.partition("/")
            where.append("provider=? AND model=?")
            args += [prov, name]
        with self._lock:
            conn = self._connect()
            sel = "SELECT key FROM responses" + (" WHERE " + " AND ".join(where) if where else "")
            victims = [r[0] for r in conn.execute(sel, args)]
            if keep_keys is not None:
                keep = set(keep_keys)
                victims = [k for k in victims if k not in keep]
            if not dry_run and victims:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    conn.executemany("DELETE FROM responses WHERE key=?", [(k,) for k in victims])
                    conn.execute("COMMIT")
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return len(victims)

    def checkpoint(self) -> None:
        """Fold the WAL into the main file (do this before committing the cache to git)."""
        if not self.path.exists():
            return
        with self._lock:
            self._connect().execute("PRAGMA wal_checkpoint(TRUNCATE)")

    # ------------------------------------------------------------------ batches
    def save_batch(self, batch_id: str, *, provider: str, model: str, base_url: str | None,
                   status: str, keys: list[str], detail: dict[str, Any] | None = None) -> None:
        now = utcnow()
        with self._lock:
            conn = self._connect()
            conn.execute(
                "INSERT INTO batches (batch_id, provider, model, base_url, status, keys_json, n, "
                "detail_json, created_utc, updated_utc) VALUES (?,?,?,?,?,?,?,?,?,?) "
                "ON CONFLICT(batch_id) DO UPDATE SET status=excluded.status, "
                "detail_json=excluded.detail_json, updated_utc=excluded.updated_utc",
                (batch_id, provider, model, base_url, status, json.dumps(keys), len(keys),
                 json.dumps(detail or {}), now, now),
            )

    def batches(self, *, status: str | None = None) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        cols = ["batch_id", "provider", "model", "base_url", "status", "keys_json", "n",
                "detail_json", "created_utc", "updated_utc"]
        q = f"SELECT {','.join(cols)} FROM batches"
        args: list[Any] = []
        if status:
            q += " WHERE status=?"
            args.append(status)
        with self._lock:
            rows = self._connect().execute(q + " ORDER BY created_utc", args).fetchall()
        out = []
        for r in rows:
            d = dict(zip(cols, r))
            d["keys"] = json.loads(d.pop("keys_json"))
            d["detail"] = json.loads(d.pop("detail_json") or "{}")
            out.append(d)
        return out
