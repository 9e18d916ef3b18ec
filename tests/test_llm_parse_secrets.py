"""Issue 11: a reply is never misread, and an API key is never written anywhere.

Parsing: with a schema, a reply is ``ok`` only when exactly one JSON value in it validates (or all
that validate are equal); otherwise ``failed`` with ``parse_error="ambiguous: N candidate verdicts ..."``.
An empty reply (OpenAI ``content: null``, an empty Anthropic content list, "") is ``failed`` with a
reason, counted and cached.

Secrets: every form of every key the client could know (provider variables, ``api_key_env=``,
stripped and unstripped, repr'd / JSON-escaped / masked) is redacted wherever error text leaves the
LLM layer, and a key with control characters or surrounding white space is refused before any request.

Every network call goes to tests/stub_server.py on 127.0.0.1.
"""

from __future__ import annotations

import json
import logging
import secrets as pysecrets
import socket
import string
import sys
import traceback
import urllib.parse
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from llm_helpers import fast, req, stub, temp_project  # noqa: E402,F401
from stub_server import StubServer  # noqa: E402

from medeval_kit.errors import MedevalError  # noqa: E402
from medeval_kit.llm import Cache, MissingKeyError, get_client, parse_reply, reparse, to_frame  # noqa: E402
from medeval_kit.llm.execute import redact  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning")

ROOT = Path(__file__).resolve().parents[1]
VERDICT = {"type": "object", "properties": {"verdict": {"enum": ["A", "B", "tie"]}}, "required": ["verdict"]}


# =========================================================================== parsing that never guesses
def test_first_json_value_is_not_taken_when_a_later_one_disagrees():
    # issue 11: 'Example {"verdict":"tie"} ... {"verdict":"A"}' parsed as ok / tie
    parsed, status, err = parse_reply('Example {"verdict":"tie"} ... so my verdict is {"verdict":"A"}', VERDICT)
    assert (parsed, status) == (None, "failed")
    assert err.startswith("ambiguous: 2 candidate verdicts"), err
    assert '{"verdict":"tie"}' in err and '{"verdict":"A"}' in err  # the candidates are named


def test_echoed_option_list_is_ambiguous_not_the_first_slot():
    # the reply stored as ok / first in tables/judging/judgments_freetext.csv (item 546, order BA);
    # "neither" is not in this schema's enum, so 3 of the 4 values validate
    text = ('The best answer is:\n\n{"verdict": "A"} or {"verdict": "B"} or {"verdict": "tie"} '
            'or {"verdict": "neither"}.')
    parsed, status, err = parse_reply(text, VERDICT)
    assert (parsed, status) == (None, "failed")
    assert err.startswith("ambiguous: 3 candidate verdicts"), err


@pytest.mark.parametrize("text, expected", [
    ('{"verdict": "B"}', "B"),                                                   # bare JSON document
    ('```json\n{"verdict": "B"}\n```', "B"),                                     # fenced block
    ('Sure.\n```\n{"verdict":"B"}\n```\nThat is my verdict.', "B"),             # fence in prose
    ('I compared both. {"verdict": "tie"}', "tie"),                              # one value in prose
    ('Format: {"verdict": "<A|B|tie>"}. Answer: {"verdict": "A"}', "A"),         # only one validates
    ('Draft {"verdict": "B", "n": 1.0} final {"n": 1.0, "verdict": "B"}', "B"),  # all that validate agree
    ('[1] says {"verdict":"A"}; again: {"verdict": "A"}', "A"),
    ('{broken {"verdict": "A"}', "A"),                                          # a later value is found
])
def test_unambiguous_replies_are_ok(text, expected):
    parsed, status, err = parse_reply(text, VERDICT)
    assert (status, err) == ("ok", None) and parsed["verdict"] == expected


def test_without_a_schema_any_text_is_ok_as_before():
    assert parse_reply('{"verdict": "A"} or {"verdict": "B"}', None) == (None, "ok", None)
    assert parse_reply("plain prose", None) == (None, "ok", None)


def test_failures_without_a_valid_candidate_keep_their_reasons():
    assert parse_reply("no json here", VERDICT)[1:] == ("failed", "not JSON: no JSON value found in the reply")
    parsed, status, err = parse_reply('{"verdict": "maybe"}', VERDICT)
    assert status == "failed" and err.startswith("schema violation at verdict")


def test_parse_reply_never_raises():
    score = {"type": "object", "properties": {"s": {"type": "number"}}, "required": ["s"]}
    assert parse_reply('{"s": NaN} or {"s": 1}', score)[2].startswith("ambiguous: 2")  # NaN: no crash
    assert parse_reply("{" * 3000 + " x", score)[1] == "failed"


@pytest.mark.parametrize("text", ["", "   \n\t"])
def test_empty_text_is_failed_with_a_reason(text):
    for schema in (VERDICT, None):
        parsed, status, err = parse_reply(text, schema)
        assert (parsed, status) == (None, "failed") and err.startswith("empty reply"), (schema, err)
    assert parse_reply(text, None, finish_reason="content_filter")[2] == "empty reply (finish_reason=content_filter)"
    assert parse_reply(None, VERDICT) == (None, "missing", None)  # no reply at all: the call failed


def _put(cache: Cache, key: str, text: str | None, schema=None, finish_reason="stop") -> None:
    cache.put({"key": key, "provider": "local", "model": "m", "text": text, "raw_json": {},
               "request_json": json.dumps({"schema": schema, "repeat": 0}), "prompt_tokens": 1,
               "completion_tokens": 1, "cost_usd": 0.0, "latency_s": 0.0, "finish_reason": finish_reason,
               "response_id": None, "source": "live", "created_utc": "2026-01-01T00:00:00Z"})


def test_reparse_follows_the_same_rule(tmp_path):
    cache = Cache(tmp_path / "c.sqlite")
    _put(cache, "k1", '{"verdict": "A"} or {"verdict": "B"}', VERDICT)
    _put(cache, "k2", 'I think {"verdict": "B"}', VERDICT)
    _put(cache, "k3", "", VERDICT, finish_reason="length")
    _put(cache, "k4", None, None, finish_reason="stop")
    df = reparse(cache).set_index("key")
    assert df.loc["k1", "parse_status"] == "failed" and df.loc["k1", "parse_error"].startswith("ambiguous: 2")
    assert df.loc["k2", "parse_status"] == "ok" and df.loc["k2", "parsed"] == {"verdict": "B"}
    assert df.loc["k3", "parse_error"] == "empty reply (finish_reason=length)"
    assert df.loc["k4", "parse_error"] == "empty reply (finish_reason=stop)"
    # a user parser never sees an empty reply: it is failed with the same reason
    df2 = reparse(cache, lambda text: text.strip()[:1] or "x").set_index("key")
    assert df2.loc["k3", "parse_status"] == "failed" and df2.loc["k3", "parse_error"].startswith("empty reply")


def test_committed_freetext_echo_is_ambiguous():
    # item 546, order BA of the committed free-text judging run (tables/judging/judgments_freetext.csv)
    key = "b2941a037bc80f4181299171016873a5cf2bf132c42314482308490b24e76e2b"
    df = reparse(Cache(ROOT / "data" / "cache" / "llm.sqlite", mode="replay"), schema=VERDICT, keys=[key])
    assert len(df) == 1 and df["text"].item().count('{"verdict"') == 4
    assert df["parse_status"].item() == "failed"
    assert df["parse_error"].item().startswith("ambiguous: 3 candidate verdicts")


# =========================================================================== empty replies
@pytest.mark.parametrize("kind", ["openai", "anthropic"])
@pytest.mark.parametrize("schema", [VERDICT, None])
def test_empty_reply_is_failed_counted_and_cached(stub, tmp_path, monkeypatch, kind, schema):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-not-a-real-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", stub.url)
    model = f"openai/gpt-4o-mini@{stub.openai_url}" if kind == "openai" else "anthropic/claude-haiku-4-5"
    cache_path = tmp_path / "c.sqlite"
    stub.queue("empty")  # OpenAI: content null + refusal; Anthropic: an empty content list
    client = fast(model, cache_path=cache_path)
    [r] = client.run([req("q", schema=schema)], progress=False)
    reason = "stop" if kind == "openai" else "end_turn"
    assert r.error is None and r.parse_status == "failed" and r.parsed is None
    assert r.parse_error == f"empty reply (finish_reason={reason})"
    assert client.last_run.n_parse_failed == 1 and client.last_run.n_failed == 0
    assert "1 parse failures" in client.last_run.summary()
    attempts = stub.stats()["attempts"]
    # cached: not paid again on the next run, and replay gives the same verdict
    [again] = fast(model, cache_path=cache_path).run([req("q", schema=schema)], progress=False)
    assert stub.stats()["attempts"] == attempts and again.cached
    assert (again.parse_status, again.parse_error) == ("failed", r.parse_error)
    [rep] = fast(f"replay/{model.split('@')[0]}", cache_path=cache_path).run([req("q", schema=schema)], progress=False)
    assert (rep.parse_status, rep.parse_error) == ("failed", r.parse_error)
    assert len(Cache(cache_path)) == 1


def test_empty_reply_in_a_batch_is_stored_not_resubmitted(stub, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    client = fast(f"openai/gpt-4o@{stub.openai_url}", cache_path=tmp_path / "c.sqlite")
    reqs = [req("a", schema=VERDICT), req("b", schema=VERDICT)]
    stub.state.batch_empty_ids = {reqs[1].key(client.spec)}  # content: null inside the batch
    out = client.run_batch(reqs, poll_interval=0.01, progress=False)
    assert [r.parse_status for r in out] == ["ok", "failed"] and out[1].error is None
    assert out[1].parse_error == "empty reply (finish_reason=stop)"
    assert len(Cache(tmp_path / "c.sqlite")) == 2  # stored: the paid reply is not bought again
    again = client.run_batch(reqs, poll_interval=0.01, progress=False)
    assert stub.stats()["batch_creates"] == 1 and [r.parse_status for r in again] == ["ok", "failed"]


# =========================================================================== secrets
def rnd_key(n: int = 40) -> str:
    """A random key with no known prefix (not 'sk-'): only the client's own knowledge can redact it."""
    alphabet = string.ascii_letters + string.digits
    while True:
        k = "".join(pysecrets.choice(alphabet) for _ in range(n))
        if not k.lower().startswith("sk"):
            return k


def key_forms(key: str) -> set[str]:
    """Every form of ``key`` that must appear nowhere: raw, stripped, repr'd, JSON-escaped,
    URL-encoded, and the pieces the APIs echo in masked form (first 8, '****' + last 4)."""
    core = key.strip()
    forms = {key, core, repr(key)[1:-1], json.dumps(key)[1:-1], repr(key.encode())[2:-1],
             urllib.parse.quote(key, safe=""), core[:8], "****" + core[-4:], "****" + key[-4:],
             "****" + repr(key)[1:-1][-4:]}
    return {f for f in forms if f}


def assert_no_key(blob: str | bytes, keys: list[str], where: str) -> None:
    for k in keys:
        for f in key_forms(k):
            needle = f.encode() if isinstance(blob, bytes) else f
            assert needle not in blob, f"{where}: contains a form of a key ({f[:3]!r}...)"


@pytest.mark.parametrize("value, problem", [
    ("KEY\r\n", "line break"), ("KEY\n", "line break"), (" KEY", "white space"), ("KEY ", "white space"),
    ("KE\tY", "control character"), ("KE\x1bY", "control character"), ("KEY\x7f", "control character"),
])
@pytest.mark.parametrize("kind", ["openai", "anthropic", "custom", "sdk"])
def test_a_key_with_control_characters_is_refused_before_any_request(stub, tmp_path, monkeypatch, value, problem,
                                                                      kind):
    key = value.replace("KEY", rnd_key())
    monkeypatch.setenv("ANTHROPIC_BASE_URL", stub.url)
    var, opts, model = "OPENAI_API_KEY", {}, f"openai/gpt-4o-mini@{stub.openai_url}"
    if kind == "anthropic":
        var, model = "ANTHROPIC_API_KEY", "anthropic/claude-haiku-4-5"
    elif kind == "custom":
        var, opts = "MY_TEAM_LLM_TOKEN", {"api_key_env": "MY_TEAM_LLM_TOKEN"}
    elif kind == "sdk":
        opts = {"transport": "sdk"}
    monkeypatch.setenv(var, key)
    client = fast(model, cache_path=tmp_path / "c.sqlite", **opts)
    with pytest.raises(MissingKeyError) as info:
        client.run([req("q1"), req("q2")], progress=False)
    msg = str(info.value)
    assert var in msg and problem in msg, msg
    assert_no_key(msg, [key], "the error")
    assert type(info.value).__name__ == "InvalidKeyError"
    assert stub.stats()["attempts"] == 0  # refused before any request: nothing to retry


def test_a_batch_with_a_bad_key_uploads_nothing(stub, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", rnd_key() + "\r\n")
    client = fast(f"openai/gpt-4o@{stub.openai_url}", cache_path=tmp_path / "c.sqlite")
    with pytest.raises(MissingKeyError, match="OPENAI_API_KEY"):
        client.submit_batch([req("q")])
    assert stub.state.files == {} and stub.state.auth_seen == []


def test_redact_knows_every_form_of_every_key(monkeypatch):
    k_openai, k_anthropic, k_custom = rnd_key(), rnd_key() + "\r\n", rnd_key(24)
    monkeypatch.setenv("OPENAI_API_KEY", k_openai)
    monkeypatch.setenv("ANTHROPIC_API_KEY", k_anthropic)
    monkeypatch.setenv("OUR_GATEWAY_SECRET", k_custom)
    client = get_client("openai/x@http://127.0.0.1:9/v1", api_key_env="OUR_GATEWAY_SECRET", cache_mode="off")
    client.provider(client.spec)  # a client that may use the variable: its value becomes known
    for k in (k_openai, k_anthropic, k_custom):
        texts = [
            f"Illegal header value b'Bearer {k}'", f"Illegal header value {k.encode()!r}",
            f"LocalProtocolError: {k!r}", json.dumps({"error": {"message": f"bad key {k}"}}),
            f"Incorrect API key provided: {k}", f"Incorrect API key provided: {k.strip()[:8]}****{k.strip()[-4:]}",
            f"key={urllib.parse.quote(k, safe='')}&x=1", f"{{'api_key': {k!r}}}",
        ]
        for t in texts:
            out = redact(t)
            assert_no_key(out, [k], t[:30])
            assert "***" in out
    assert redact("no secret here: tokens 12, cost $0.01") == "no secret here: tokens 12, cost $0.01"


def test_stored_provider_output_never_holds_a_known_key(monkeypatch):
    from medeval_kit.llm.secrets import redact_json

    k = rnd_key()
    monkeypatch.setenv("ANTHROPIC_API_KEY", k)
    out = redact_json({"choices": [{"message": {"content": f"echo {k}\r\n and sk-learn"}}]})
    assert k not in out and json.loads(out)["choices"][0]["message"]["content"] == "echo ***\r\n and sk-learn"
    assert redact_json({"a": "sk-learn is fine"}) == '{"a": "sk-learn is fine"}'  # model text: keys only


def test_log_records_of_the_llm_layer_are_redacted(monkeypatch, caplog, tmp_path):
    k = rnd_key()
    monkeypatch.setenv("OPENAI_API_KEY", k)
    caplog.set_level(logging.DEBUG, logger="medeval_kit")
    handler = logging.FileHandler(tmp_path / "log.txt")
    logging.getLogger("medeval_kit").addHandler(handler)
    try:
        for name in ("medeval_kit.llm", "medeval_kit.llm.execute", "medeval_kit.llm.batch",
                     "medeval_kit.llm.providers", "medeval_kit.llm.cache"):
            lg = logging.getLogger(name)
            lg.warning("failed with %s", f"header b'Bearer {k}\\r\\n'")
            lg.info(f"echo {k[:8]}****{k[-4:]}")
            try:
                raise ValueError(f"Illegal header value {k!r}")
            except ValueError:
                lg.exception("boom")
    finally:
        logging.getLogger("medeval_kit").removeHandler(handler)
        handler.close()
    assert "failed with" in caplog.text and "boom" in caplog.text
    assert_no_key(caplog.text, [k], "caplog")
    assert_no_key((tmp_path / "log.txt").read_bytes(), [k], "log file")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_canary_random_keys_never_written(tmp_path, monkeypatch, capfd, caplog):
    """Random keys with no known prefix, one ending in CRLF (a Windows .env), one in a custom
    variable: a notebook, a 401 echoing the masked and the full key, a failing batch, transport
    errors and a refused key; then every written file and the captured output are grepped."""
    import papermill as pm

    k_openai, k_crlf, k_custom = rnd_key(), rnd_key() + "\r\n", rnd_key(32)
    keys = [k_openai, k_crlf, k_custom]
    monkeypatch.setenv("OPENAI_API_KEY", k_openai)
    monkeypatch.setenv("ANTHROPIC_API_KEY", k_crlf)
    monkeypatch.setenv("ACME_LLM_GATEWAY_TOKEN", k_custom)
    nb_cache = temp_project(monkeypatch, tmp_path / "project")  # the notebook's default cache goes there
    cache_path = tmp_path / "c.sqlite"
    log_path = tmp_path / "run.log"
    handler = logging.FileHandler(log_path)
    logging.getLogger("medeval_kit").addHandler(handler)
    logging.getLogger("medeval_kit").setLevel(logging.DEBUG)
    caplog.set_level(logging.DEBUG)
    raised: list[str] = []
    out = []

    def attempt(fn):
        try:
            return fn()
        except Exception as exc:  # recorded with its traceback (and chained causes), then grepped
            raised.append(f"{type(exc).__name__} {isinstance(exc, MedevalError)}\n"
                          + "".join(traceback.format_exception(exc)))
            return []

    try:
        with StubServer(batch_error_echo_key=True, fault_batches=True) as srv:
            monkeypatch.setenv("ANTHROPIC_BASE_URL", srv.url)
            # 1. a notebook: two judge calls get 401s that echo the masked and the full key
            srv.queue("401", "401full")
            nb_out = tmp_path / "judging.ipynb"
            try:
                pm.execute_notebook(
                    str(ROOT / "notebooks" / "judging.ipynb"), str(nb_out), cwd=str(ROOT / "notebooks"),
                    parameters={"judge_model": f"openai/gpt-4o-mini@{srv.openai_url}", "n_items": 3, "repeats": 1,
                                "cache_mode": "use", "figures_dir": str(tmp_path / "figures"),
                                "tables_dir": str(tmp_path / "tables")},
                    progress_bar=False, kernel_name="python3", log_output=True)
            except Exception as exc:  # a failing notebook is still grepped (it is written with its error)
                raised.append(str(exc))
            assert any(a.endswith(k_openai) for a in srv.state.auth_seen), "the key was not used"
            # 2. a custom variable: 401s echoing the masked and the full key, then a timeout
            srv.queue("401", "401full", "timeout", "ok")
            srv.set(timeout_sleep=0.5)
            custom = fast(f"openai/gpt-4o-mini@{srv.openai_url}", cache_path=cache_path, timeout=0.2,
                          api_key_env="ACME_LLM_GATEWAY_TOKEN")
            out += attempt(lambda: custom.run([req("c1", schema=VERDICT), req("c2"), req("c3")], progress=True))
            assert sum(1 for r in out if r.error and "401" in r.error) == 2
            assert all("***" in r.error for r in out if r.error and "401" in r.error)  # the echoes were keys
            # 3. a transport error (connection refused), same custom key
            dead = fast(f"openai/gpt-4o-mini@http://127.0.0.1:{_free_port()}/v1", cache_path=cache_path,
                        api_key_env="ACME_LLM_GATEWAY_TOKEN", max_retries=1)
            out += attempt(lambda: dead.run([req("d1")], progress=False))
            # 4. the CRLF key (Anthropic): refused before any request
            crlf = fast("anthropic/claude-haiku-4-5", cache_path=cache_path)
            out += attempt(lambda: crlf.run([req("a1", schema=VERDICT), req("a2")], progress=True))
            # 5. a failing batch: a 401 with the full key on upload, then an item error quoting the key
            batch = fast(f"openai/gpt-4o@{srv.openai_url}", cache_path=cache_path,
                         api_key_env="ACME_LLM_GATEWAY_TOKEN")
            breqs = [req(f"b{i}", schema=VERDICT) for i in range(3)]
            srv.queue("401full")
            attempt(lambda: batch.submit_batch(breqs))
            srv.state.batch_error_ids = {breqs[1].key(batch.spec)}
            out += attempt(lambda: batch.run_batch(breqs, poll_interval=0.01, progress=False))
            assert any(r.error and "batch item failed" in r.error and "***" in r.error for r in out)
    finally:
        logging.getLogger("medeval_kit").removeHandler(handler)
        handler.close()
    assert any("ANTHROPIC_API_KEY" in t for t in raised), raised  # the refused key names its variable
    Cache(cache_path).export(tmp_path / "export.jsonl")
    to_frame(out).to_csv(tmp_path / "responses.csv")
    (tmp_path / "raised.txt").write_text("\n".join(raised))
    (tmp_path / "errors.txt").write_text("\n".join(str(r.error) for r in out))
    files = [p for p in tmp_path.rglob("*") if p.is_file() and not p.is_symlink()]  # not our bundled data
    names = {p.name for p in files}
    assert {"judging.ipynb", "judgments.csv", "c.sqlite", "run.log"} <= names and nb_cache in files, names
    for p in files:  # cache (+WAL), log, export, tables, executed notebook
        assert_no_key(p.read_bytes(), keys, str(p.relative_to(tmp_path)))
    captured = capfd.readouterr()
    assert_no_key(captured.out + captured.err, keys, "captured output")
    assert_no_key(caplog.text, keys, "log records")
