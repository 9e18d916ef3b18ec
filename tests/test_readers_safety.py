"""Readers on hostile files (issue 20, finding 7): bounded reads, checked types, bounded loops,
and one clear error (:class:`ReaderError`, a ``MedevalError``) instead of a traceback.

Each test below reproduces one finding: a zip bomb, a lying zip header, a huge ``turn``, deep
nesting, bad UTF-8, wrong JSON types, huge integers. The fuzz tests (a deterministic sweep that puts
every wrong type at every field of each format's fixture, and a derandomized hypothesis run) count
outcomes and assert that none is a traceback. Speed and memory are measured by
``benchmarks/bench_readers.py``, never asserted here - except that a bomb must not be inflated.
"""

from __future__ import annotations

import json
import re
import struct
import subprocess
import sys
import time
import zipfile
import zlib
from collections import Counter
from pathlib import Path

import pytest
from format_fixtures import ALPACA, HEALTH, HUMAN, INSPECT_JSON, INSPECT_MEMBERS, PAIR, PROMPTFOO, SINGLE  # noqa: E402

from medeval_kit import cli
from medeval_kit.errors import MedevalError
from medeval_kit.readers import ReaderError, read_format

ROOT = Path(__file__).resolve().parents[1]
MB = 1 << 20


# --------------------------------------------------------------------------- builders
def _members() -> dict[str, bytes]:
    return {str(p.relative_to(INSPECT_MEMBERS)): p.read_bytes() for p in INSPECT_MEMBERS.rglob("*.json")}


def _eval_zip(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for n, data in sorted(members.items()):
            z.writestr(n, data)
    return path


def _deflated_zeros(n_chunks: int) -> tuple[bytes, int]:
    """The raw deflate stream of ``n_chunks`` chunks of ``b"0" * MB`` and its CRC-32.

    A full flush resets the compressor, so every chunk compresses to the same bytes: one chunk is compressed and
    its bytes repeated (a 1 GB bomb costs a CRC pass, not a gigabyte of deflating)."""
    chunk = b"0" * MB
    co = zlib.compressobj(6, zlib.DEFLATED, -15)
    one = co.compress(chunk) + co.flush(zlib.Z_FULL_FLUSH)
    assert co.compress(chunk) + co.flush(zlib.Z_FULL_FLUSH) == one  # the repeat is exact
    crc = 0
    for _ in range(n_chunks):
        crc = zlib.crc32(chunk, crc)
    return one * n_chunks + co.flush(), crc


def _bomb(path: Path, n_bytes: int, *, member: str = "samples/a_epoch_1.json") -> Path:
    """An .eval zip whose sample member inflates to ``n_bytes`` zeros (``n_bytes // MB`` chunks of 1 MB), next to the
    fixture's header.json; written by hand (local headers, central directory) as zipfile would, without zip64."""
    n_chunks = n_bytes // MB
    assert n_chunks * MB <= 2**32 - 1, "no zip64 here"
    head = _members()["header.json"]
    co = zlib.compressobj(6, zlib.DEFLATED, -15)
    members = [("header.json", co.compress(head) + co.flush(), zlib.crc32(head), len(head)),
               (member, *_deflated_zeros(n_chunks), n_chunks * MB)]
    local, central = bytearray(), bytearray()
    for name, data, crc, size in members:
        raw = name.encode()
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, zipfile.ZIP_DEFLATED, 0, 0x21, crc,
                               len(data), size, len(raw), 0, 0, 0, 0, 0o100644 << 16, len(local)) + raw
        local += struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, zipfile.ZIP_DEFLATED, 0, 0x21, crc, len(data), size,
                             len(raw), 0) + raw + data
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(members), len(members), len(central), len(local), 0)
    path.write_bytes(bytes(local + central + end))
    return path


def _lie_about_size(path: Path, member: str, declared: int) -> None:
    """Patch the member's uncompressed size in its local header and central directory entry."""
    data = bytearray(path.read_bytes())
    name = member.encode()
    with zipfile.ZipFile(path) as z:
        off = z.getinfo(member).header_offset
    data[off + 22: off + 26] = struct.pack("<I", declared)
    i = data.find(b"PK\x01\x02")
    while i >= 0:
        n = struct.unpack("<H", data[i + 28: i + 30])[0]
        if bytes(data[i + 46: i + 46 + n]) == name:
            data[i + 24: i + 28] = struct.pack("<I", declared)
        i = data.find(b"PK\x01\x02", i + 4)
    path.write_bytes(bytes(data))


_READS_IN_SUBPROCESS = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))  # a bomb must fail here, not take the machine
from medeval_kit.readers import ReaderError, read_format


class OverBudget(BaseException):
    pass


def peak_mb():
    # VmHWM, not ru_maxrss: ru_maxrss survives exec, so it would report the (large) pytest process that forked us
    hwm = [l for l in open("/proc/self/status") if l.startswith("VmHWM:")]
    return int(hwm[0].split()[1]) // 1024 if hwm else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024


for i, (fmt, path, opts, budget) in enumerate({reads!r}):
    lines, over = [0], [False]

    def local(frame, event, arg):
        if event == "line":
            lines[0] += 1
            if lines[0] > budget:  # a loop that does not stop: stop it here, and say so
                over[0] = True
                raise OverBudget
        return local

    if budget:
        sys.settrace(lambda frame, event, arg: local)
    try:
        read_format(fmt, path, **opts)
        print(f"@@{{i}}@@ READ OK")
    except ReaderError as exc:
        print(f"@@{{i}}@@ READER ERROR", exc)
    except OverBudget:
        pass
    finally:
        sys.settrace(None)
    print(f"@@{{i}}@@ OVER_BUDGET", over[0])
    print(f"@@{{i}}@@ LINES", lines[0])
    print(f"@@{{i}}@@ PEAK_MB", peak_mb())
"""


def _reads_sub(reads: list[tuple[str, Path, dict, int]], timeout: float = 120) -> list[dict]:
    """Read each (format, path, options, line budget) in turn in ONE fresh Python process under a 3 GB address-space
    limit; per read: its output ('out'), the process's peak RSS so far in MB ('peak', which only grows: a later
    read's peak bounds its own), and with a budget, the Python lines the read executed ('lines') and whether it
    ran out of them ('over': the read was stopped)."""
    code = _READS_IN_SUBPROCESS.format(reads=[(f, str(p), o, b) for f, p, o, b in reads])
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    outs, i = [""] * len(reads), None
    for line in proc.stdout.splitlines(keepends=True):  # "@@i@@ " starts each line read i prints
        m = re.match(r"@@(\d+)@@ ", line)
        if m:
            i, line = int(m.group(1)), line[m.end():]
        if i is not None:
            outs[i] += line
    return [{"out": out, "peak": int(out.split("PEAK_MB")[-1].split()[0]),
             "lines": int(out.split("LINES")[-1].split()[0]), "over": "OVER_BUDGET True" in out} for out in outs]


LINE_BUDGET = 2_000_000  # Python lines one small read may execute; walking a billion turns would take ~1e9


@pytest.fixture(scope="module")
def subprocess_reads(tmp_path_factory) -> dict[str, dict]:
    """The reads whose memory is measured, in one fresh process (one interpreter start for both):
    a 1 GB zip bomb at the default member limit, and an MT-bench human vote with a huge ``turn``."""
    tmp = tmp_path_factory.mktemp("subprocess_reads")
    bomb = _bomb(tmp / "bomb.eval", 1 << 30)
    assert bomb.stat().st_size < 3 * MB
    rec = json.loads(HUMAN.read_text())[0]
    rec["turn"] = 1_000_000_000
    human = tmp / "human.jsonl"
    human.write_text(json.dumps(rec) + "\n")
    bomb_read, turn_read = _reads_sub([("inspect", bomb, {"use_inspect_ai": False}, 0),
                                       ("mtbench_human", human, {}, LINE_BUDGET)])
    return {"bomb": bomb_read, "turn": turn_read}


# --------------------------------------------------------------------------- finding: zip bomb
@pytest.mark.xdist_group("readers_safety_subprocess_reads")
def test_eval_zip_bomb_1gb_default_limit_is_refused_with_low_rss(subprocess_reads):
    out, peak = subprocess_reads["bomb"]["out"], subprocess_reads["bomb"]["peak"]
    assert "READER ERROR" in out and "member samples/a_epoch_1.json" in out and "max_member_bytes" in out, out
    assert peak < 400, f"peak RSS {peak} MB"


def test_eval_zip_bomb_with_lying_header_stops_at_the_cap(tmp_path):
    path = _bomb(tmp_path / "liar.eval", 64 * MB)
    _lie_about_size(path, "samples/a_epoch_1.json", 300)
    with zipfile.ZipFile(path) as z:
        assert z.getinfo("samples/a_epoch_1.json").file_size == 300  # the header lies
    # zipfile itself stops at the declared size (CRC error); the cap stops inflation either way
    with pytest.raises(ReaderError, match=r"liar\.eval: member samples/a_epoch_1\.json: .*(more than|Bad CRC)"):
        read_format("inspect", path, use_inspect_ai=False, max_member_bytes=4 * MB)


def test_eval_member_limit_can_be_raised(tmp_path):
    path = _bomb(tmp_path / "big.eval", 3 * MB)
    with pytest.raises(ReaderError, match=r"max_member_bytes"):
        read_format("inspect", path, use_inspect_ai=False, max_member_bytes=1 * MB)
    # raised: the member is read (and then refused as malformed JSON, which it is: zeros are a number...)
    with pytest.raises(ReaderError) as exc:
        read_format("inspect", path, use_inspect_ai=False, max_member_bytes=8 * MB)
    assert "max_member_bytes" not in str(exc.value)


def test_zstd_bomb_is_bounded(tmp_path):
    zstandard = pytest.importorskip("zstandard")
    from test_readers import _zip_method

    members = _members()
    members["samples/a_epoch_1.json"] = b"0" * (32 * MB)
    path = _zip_method(tmp_path / "z.eval", members, 93, lambda b: zstandard.ZstdCompressor().compress(b))
    _lie_about_size(path, "samples/a_epoch_1.json", 300)
    with pytest.raises(ReaderError, match=r"member samples/a_epoch_1\.json: .*max_member_bytes"):
        read_format("inspect", path, use_inspect_ai=False, max_member_bytes=4 * MB)


def test_single_json_file_size_is_bounded(tmp_path):
    p = tmp_path / "annotations.json"
    p.write_text(ALPACA.read_text() + " " * (2 * MB))
    with pytest.raises(ReaderError, match=r"annotations\.json: .*max_json_bytes"):
        read_format("alpaca_eval", p, max_json_bytes=1 * MB)
    assert read_format("alpaca_eval", p, max_json_bytes=4 * MB).judgments is not None


# --------------------------------------------------------------------------- finding: turn loop
@pytest.mark.xdist_group("readers_safety_subprocess_reads")
def test_mtbench_human_huge_turn_is_an_error_fast(subprocess_reads):
    r = subprocess_reads["turn"]
    # "fast" as work done, not as seconds: the Python lines the read executed (a reader that walked a billion
    # turns would run past the budget, and is stopped there) and its memory
    assert not r["over"] and r["lines"] < LINE_BUDGET and r["peak"] < 400, \
        f"the read ran {r['lines']} Python lines (budget {LINE_BUDGET}) and peaked at {r['peak']} MB"
    assert "READER ERROR" in r["out"] and "line 1: field 'turn'" in r["out"], r["out"]


# --------------------------------------------------------------------------- finding: nesting, bytes, types
_ALL = ["inspect", "inspect_eval", "alpaca_eval", "mtbench", "mtbench_human", "healthbench", "promptfoo"]


def _write(tmp_path: Path, fmt: str, text: bytes) -> tuple[str, Path, dict]:
    """A file of ``fmt`` holding ``text`` (as the sample member of an .eval for ``inspect_eval``)."""
    if fmt == "inspect_eval":
        m = _members()
        m["samples/a_epoch_1.json"] = text
        return "inspect", _eval_zip(tmp_path / "log.eval", m), {"use_inspect_ai": False}
    suffix = ".jsonl" if fmt in ("mtbench", "healthbench") else ".json"
    p = tmp_path / f"{fmt}{suffix}"
    p.write_bytes(text)
    return fmt, p, {"use_inspect_ai": False} if fmt == "inspect" else {}


@pytest.mark.parametrize("fmt", _ALL)
def test_deep_nesting_is_a_clear_error(tmp_path, fmt):
    deep = b"[" * 200_000 + b"]" * 200_000
    text = deep if fmt in ("inspect", "alpaca_eval", "promptfoo", "mtbench_human") else b'{"a": ' + deep + b"}\n"
    name, p, opts = _write(tmp_path, fmt, text)
    with pytest.raises(ReaderError, match=r"nested too deeply"):
        read_format(name, p, **opts)


@pytest.mark.parametrize("fmt", ["inspect_eval", "mtbench", "healthbench", "alpaca_eval"])
def test_bad_utf8_is_a_clear_error(tmp_path, fmt):
    good = {"inspect_eval": _members()["samples/a_epoch_1.json"], "mtbench": PAIR.read_bytes(),
            "healthbench": HEALTH.read_bytes(), "alpaca_eval": ALPACA.read_bytes()}[fmt]
    text = good[:40] + b"\xff" + good[40:]
    name, p, opts = _write(tmp_path, fmt, text)
    with pytest.raises(ReaderError, match=r"UTF-8"):
        read_format(name, p, **opts)


@pytest.mark.parametrize("change, match", [
    (("header.json", []), r"member header\.json.*expected a JSON object"),
    (("header.json", "scorers", 1), r"eval\.scorers.*expected a list"),
    (("sample", "epoch", 2**70), r"samples/a_epoch_1\.json: field 'epoch'"),
    (("sample", "scores", {"rubric": {"value": {"x": [1]}}}), None),
])
def test_inspect_wrong_types_are_clear_errors(tmp_path, change, match):
    m = _members()
    if change[0] == "header.json" and len(change) == 2:
        m["header.json"] = json.dumps(change[1]).encode()
    elif change[0] == "header.json":
        h = json.loads(m["header.json"])
        h["eval"][change[1]] = change[2]
        m["header.json"] = json.dumps(h).encode()
    else:
        s = json.loads(m["samples/a_epoch_1.json"])
        s[change[1]] = change[2]
        m["samples/a_epoch_1.json"] = json.dumps(s).encode()
    p = _eval_zip(tmp_path / "log.eval", m)
    if match is None:
        read_format("inspect", p, use_inspect_ai=False)
        return
    with pytest.raises(ReaderError, match=match):
        read_format("inspect", p, use_inspect_ai=False)


@pytest.mark.parametrize("fmt, path, field", [
    ("mtbench", PAIR, "turn"), ("mtbench", SINGLE, "turn"), ("promptfoo", PROMPTFOO, "testIdx"),
])
def test_huge_integers_are_clear_errors(tmp_path, fmt, path, field):
    p = tmp_path / path.name
    if fmt == "promptfoo":
        obj = json.loads(path.read_text())
        obj["results"]["results"][0][field] = 2**70
        p.write_text(json.dumps(obj))
    else:
        rec = json.loads(path.read_text().splitlines()[0])
        rec[field] = 2**70
        p.write_text(json.dumps(rec) + "\n")
    with pytest.raises(ReaderError, match=rf"field '{field}'"):
        read_format(fmt, p)


def test_truncated_and_broken_zips_are_clear_errors(tmp_path):
    good = _eval_zip(tmp_path / "good.eval", _members()).read_bytes()
    for cut in (10, len(good) // 3, len(good) // 2, len(good) - 30):
        p = tmp_path / f"cut{cut}.eval"
        p.write_bytes(good[:cut])
        with pytest.raises(ReaderError):
            read_format("inspect", p, use_inspect_ai=False)
    corrupt = bytearray(good)
    with zipfile.ZipFile(tmp_path / "good.eval") as z:
        off = z.getinfo("samples/a_epoch_1.json").header_offset
    corrupt[off + 40: off + 60] = b"\x00" * 20  # inside the compressed data
    p = tmp_path / "corrupt.eval"
    p.write_bytes(bytes(corrupt))
    with pytest.raises(ReaderError):
        read_format("inspect", p, use_inspect_ai=False)


# --------------------------------------------------------------------------- fuzz
_WRONG = [None, True, -1, 2**70, 1.5, "x", [1, "a"], {"k": None}]

_FIXTURES = {  # format name -> (fixture, layout)
    "inspect": (INSPECT_JSON, "json"), "inspect_eval": (INSPECT_MEMBERS, "eval"), "alpaca_eval": (ALPACA, "json"),
    "mtbench": (PAIR, "jsonl"), "mtbench_single": (SINGLE, "jsonl"), "mtbench_human": (HUMAN, "json"),
    "healthbench": (HEALTH, "jsonl"), "promptfoo": (PROMPTFOO, "json"),
}


def _load_fixture(key: str):
    path, layout = _FIXTURES[key]
    if layout == "jsonl":
        return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    if layout == "eval":
        return {n: json.loads(b) for n, b in _members().items()}
    return json.loads(path.read_text())


def _paths(obj, prefix=(), max_list=2):
    """Every (key or index) path of ``obj``; only the first ``max_list`` elements of each list."""
    out = []
    items = obj.items() if isinstance(obj, dict) else enumerate(obj[:max_list]) if isinstance(obj, list) else ()
    for k, v in items:
        out.append(prefix + (k,))
        out += _paths(v, prefix + (k,), max_list)
    return out


def _set(obj, path, value):
    """A copy of ``obj`` with ``value`` at ``path`` (unchanged when an earlier mutation removed the path).

    Only the lists and dicts along ``path`` are copied; the rest is shared with ``obj`` (nothing here changes an
    object in place: the copies are only written out as JSON, or copied again by the next ``_set``)."""
    def put(cur, rest):
        if not isinstance(cur, (dict, list)):
            raise TypeError(f"cannot index {type(cur).__name__}")
        new = cur.copy()
        new[rest[0]] = value if len(rest) == 1 else put(cur[rest[0]], rest[1:])
        return new

    try:
        return put(obj, path)
    except (KeyError, IndexError, TypeError):
        return obj


def _dump(key: str, obj, tmp: Path) -> tuple[str, Path, dict]:
    _, layout = _FIXTURES[key]
    fmt = {"inspect_eval": "inspect", "mtbench_single": "mtbench"}.get(key, key)
    opts = {"use_inspect_ai": False} if fmt == "inspect" else {}
    if layout == "eval":
        return fmt, _eval_zip(tmp / "f.eval", {n: json.dumps(v).encode() for n, v in obj.items()}), opts
    p = tmp / ("f.jsonl" if layout == "jsonl" else "f.json")
    p.write_text("\n".join(json.dumps(r) for r in obj) + "\n" if layout == "jsonl" else json.dumps(obj))
    return fmt, p, opts


def _outcome(fmt: str, path: Path, opts: dict) -> str:
    """'ok', 'error' (a MedevalError) or 'traceback: TYPE: message' (anything else, or a reader bug)."""
    try:
        read_format(fmt, path, **opts)
        return "ok"
    except MedevalError as exc:
        if "reader bug" in str(exc):  # the last-resort guard caught something the checks missed
            return f"traceback: {exc}"
        return "error"
    except Exception as exc:  # noqa: BLE001 - counting is the point
        return f"traceback: {type(exc).__name__}: {exc}"


def test_type_sweep_every_field_every_wrong_type(tmp_path):
    """Deterministic: every wrong JSON type at every field of every fixture (cf. the 2,256-file fuzz)."""
    counts: dict[str, Counter] = {}
    bad = []
    for key in _FIXTURES:
        base = _load_fixture(key)
        c = counts.setdefault(key, Counter())
        for path in _paths(base, max_list=1 if key in ("inspect", "promptfoo") else 2):
            for value in _WRONG:
                fmt, p, opts = _dump(key, _set(base, path, value), tmp_path)
                o = _outcome(fmt, p, opts)
                c[o.split(":")[0]] += 1
                if o.startswith("traceback"):
                    bad.append((key, path, value, o))
    print({k: dict(v) for k, v in counts.items()})
    assert sum(sum(c.values()) for c in counts.values()) > 2000
    assert not bad, f"{len(bad)} tracebacks, e.g. {bad[:5]}"


def test_hypothesis_fuzz_all_formats(tmp_path_factory):
    pytest.importorskip("hypothesis")
    st = pytest.importorskip("hypothesis.strategies")
    from hypothesis import HealthCheck, given, settings

    json_values = st.recursive(
        st.none() | st.booleans() | st.integers(min_value=-(2**80), max_value=2**80)
        | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=8),
        lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=4), kids, max_size=3),
        max_leaves=6)
    keys = sorted(_FIXTURES)
    bases = {k: _load_fixture(k) for k in keys}
    paths = {k: _paths(bases[k]) for k in keys}
    counts: dict[str, Counter] = {k: Counter() for k in keys}
    bad = []
    tmp = tmp_path_factory.mktemp("fuzz")

    @st.composite
    def hostile(draw):
        key = draw(st.sampled_from(keys))
        kind = draw(st.sampled_from(["value", "value", "value", "deep", "bytes", "truncate", "bomb"]))
        obj = bases[key]
        for _ in range(draw(st.integers(1, 3))):
            obj = _set(obj, draw(st.sampled_from(paths[key])), draw(json_values))
        return key, kind, obj, draw(st.integers(0, 10**9)), draw(st.binary(min_size=1, max_size=4))

    @settings(max_examples=1200, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(hostile())
    def run(case):
        key, kind, obj, pos, junk = case
        if kind == "deep":
            obj = _set(obj, paths[key][pos % len(paths[key])], "__DEEP__")
        fmt, p, opts = _dump(key, obj, tmp)
        if kind == "deep":
            data = p.read_bytes()
            if p.suffix == ".eval":
                fmt, p, opts = _write(tmp, "inspect_eval", b'{"id": ' + b"[" * 5000 + b"}")
            else:
                p.write_bytes(data.replace(b'"__DEEP__"', b"[" * (800 + pos % 100_000), 1))
        elif kind in ("bytes", "truncate"):
            data = p.read_bytes()
            at = pos % max(len(data), 1)
            p.write_bytes(data[:at] + junk + data[at:] if kind == "bytes" else data[:at])
        elif kind == "bomb" and p.suffix == ".eval":
            if not (tmp / "b.eval").exists():  # the same bomb every time: built once, only read after that
                _bomb(tmp / "b.eval", 8 * MB)
            fmt, p, opts = "inspect", tmp / "b.eval", {"use_inspect_ai": False, "max_member_bytes": MB + pos % (16 * MB)}
        o = _outcome(fmt, p, opts)
        counts[key][o.split(":")[0]] += 1
        if o.startswith("traceback"):
            bad.append((key, kind, o))

    t0 = time.perf_counter()
    run()
    print({k: dict(v) for k, v in counts.items()}, f"{time.perf_counter() - t0:.1f} s")
    assert not bad, f"{len(bad)} tracebacks, e.g. {bad[:5]}"


# --------------------------------------------------------------------------- CLI
def test_cli_import_hostile_file_is_one_line_exit_2(tmp_path, capsys):
    bomb = _bomb(tmp_path / "bomb.eval", 8 * MB)
    rc = cli.main(["import", "inspect", str(bomb), "-o", str(tmp_path / "o.csv"), "--no-inspect-ai",
                   "--max-member-mb", "1"])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith(f"medeval: error: {bomb}: member samples/a_epoch_1.json") and "Traceback" not in err
    deep = tmp_path / "deep.jsonl"
    deep.write_bytes(b'{"a": ' + b"[" * 200_000 + b"}\n")
    proc = subprocess.run([sys.executable, "-m", "medeval_kit.cli", "import", "mtbench", str(deep), "-o",
                           str(tmp_path / "o.csv")], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stderr.startswith(f"medeval: error: {deep}: line 1: ") and "Traceback" not in proc.stderr
    assert proc.stderr.count("\n") == 1


def test_limits_from_cli_flag_and_environment(tmp_path, capsys, monkeypatch):
    rc = cli.main(["import", "alpaca_eval", str(ALPACA), "-o", str(tmp_path / "o.csv"), "--max-json-mb", "0.001"])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith(f"medeval: error: {ALPACA}: ") and "max_json_bytes" in err
    rc = cli.main(["import", "mtbench", str(PAIR), "-o", str(tmp_path / "o.csv"), "--max-member-mb", "1"])
    assert rc == 2 and "--max-member-mb applies to the inspect format only" in capsys.readouterr().err
    bomb = _bomb(tmp_path / "bomb.eval", 3 * MB)
    monkeypatch.setenv("MEDEVAL_MAX_MEMBER_MB", "1")
    with pytest.raises(ReaderError, match=r"max_member_bytes=1048576"):
        read_format("inspect", bomb, use_inspect_ai=False)
    monkeypatch.setenv("MEDEVAL_MAX_MEMBER_MB", "lots")
    with pytest.raises(ReaderError, match=r"MEDEVAL_MAX_MEMBER_MB='lots'"):
        read_format("inspect", bomb, use_inspect_ai=False)


def test_jsonl_line_longer_than_the_limit(tmp_path):
    p = tmp_path / "pair.jsonl"
    p.write_text(PAIR.read_text().splitlines()[0] + "\n" + '{"a": "' + "x" * (2 * MB) + '"}\n')
    with pytest.raises(ReaderError, match=r"pair\.jsonl: line 2: longer than max_json_bytes"):
        read_format("mtbench", p, max_json_bytes=MB)
