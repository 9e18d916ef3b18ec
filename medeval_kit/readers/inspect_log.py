"""Inspect AI evaluation logs (``.eval`` zip logs and ``.json`` logs) -> judgments, items, responses.

Format, as checked against UKGovernmentBEIS/inspect_ai:

* ``src/inspect_ai/log/_recorders/eval.py`` (commit 44b41cd36a6bf4b63dc7dfb17554fc7e0eed3566): an
  ``.eval`` file is a zip holding ``header.json`` (the :class:`EvalLog` without samples: ``eval``,
  ``plan``, ``results``, ``stats``, ``status``), ``samples/{id}_epoch_{epoch}.json`` (one
  ``EvalSample`` each), ``summaries.json``, ``reductions.json`` and ``_journal/start.json``
  (``{version, eval, plan}``; the only header of a log still being written). Older logs
  (commit 00e215b69f597c73405c00cf6ec6d1cda5f96e30) have ``start.json`` + ``results.json`` instead of
  ``header.json``. Current Inspect writes the zip members zstd-compressed (zip method 93; checked on a
  log written by inspect_ai 0.3.285); older ones deflate.
* ``src/inspect_ai/log/_log.py`` (commits 7967c4fbafcaddce20623ab29dc30dcf83380a84 and later):
  ``EvalSample`` has ``id``, ``epoch`` (1-based), ``input`` (str or chat messages), ``target`` (str or
  list), ``output`` (``ModelOutput`` with ``completion``), ``scores`` (``{name: Score}``) and ``error``;
  ``EvalSpec`` has ``task``, ``model``, ``dataset.name``, ``model_roles`` (``{role: {model, ...}}``)
  and ``scorers`` (``[{name, options}]``); ``EvalResults.scores`` has ``name``, ``scorer``, ``params``.
  A ``.json`` log is the whole ``EvalLog`` with ``samples``.
* ``src/inspect_ai/scorer/_metric.py`` (commit 03ed3dda081388b7e4e68e988a8ada9e3951305f): ``Score`` has
  ``value`` (str | number | bool | list | dict), ``answer``, ``explanation``, ``metadata``; the
  constants ``C``/``I``/``P``/``N`` (correct, incorrect, partial, no answer; ``value_to_float`` maps
  them to 1, 0, 0.5, 0); ``Score.unscored()`` is value NaN.
* ``src/inspect_ai/scorer/_model.py`` (commit 02f63870aba9211e0775090d20694a21c30c0eb9) and the
  "Model Grading" page (https://inspect.aisi.org.uk/model-graded.html): ``model_graded_qa`` /
  ``model_graded_fact`` put the grading transcript in ``metadata["grading"]``; when the grade cannot
  be parsed the explanation starts ``"Grade not found in model output: "`` (value ``I`` in old
  versions, NaN in 0.3.285). The grader is the scorer's ``model`` option, else the model bound to its
  ``model_role`` (default ``"grader"``) in ``eval.model_roles``, else the evaluated model.

One ``judgments`` row per (sample, epoch, score): ``item`` = sample id, ``repeat`` = epoch - 1
(``epoch`` is kept), ``protocol="reference"`` (Inspect scores an output against the sample's target),
``criterion`` = score name (``name/key`` for dict-valued scores), ``order="single"``, ``judge`` = the
grader model when recorded, else the scorer name. ``verdict`` names the Inspect letter
(``correct``/``incorrect``/``partial``/``no_answer``) or keeps another string value; ``score`` is the
value as a number (``value_to_float``'s rule), NaN when it has none. An unparsed grade or an
unscored (NaN) value is ``parse_status="failed"``; a score absent from a sample (e.g. the sample
errored) is ``"missing"``. Both are counted, never turned into a grade.
"""

from __future__ import annotations

import math
import zipfile
from pathlib import Path
from typing import Any

from medeval_kit.readers._common import (
    ReaderError,
    ReadResult,
    Tally,
    as_text,
    is_missing,
    load_json,
    where_error,
)
from medeval_kit.readers._limits import MemberReader, guarded, json_limit, member_limit, parse_json

__all__ = ["read_inspect"]

_LETTERS = {"C": "correct", "I": "incorrect", "P": "partial", "N": "no_answer"}
_LETTER_SCORE = {"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0}
_GRADE_NOT_FOUND = "Grade not found in model output"
_MAX_EPOCH = 2**31 - 1


@guarded
def read_inspect(path: str | Path, *, use_inspect_ai: bool | None = None, max_member_bytes: int | None = None,
                 max_json_bytes: int | None = None) -> ReadResult:
    """Read an Inspect AI log (``.eval`` or ``.json``) into judgments, items and responses.

    See the module docstring for the mapping and the sources it was checked against.

    Parameters
    ----------
    path : str or Path
        The file.
    use_inspect_ai : bool, optional
        ``None`` (default) reads with ``inspect_ai.log.read_eval_log`` when the package is installed
        (``pip install 'medeval_kit[inspect]'``), else with the built-in reader of the documented
        layout; ``True`` requires inspect_ai; ``False`` always uses the built-in reader.
    max_member_bytes : int, optional
        Bound on each zip member of an ``.eval`` (declared and inflated size); default 512 MB or
        ``MEDEVAL_MAX_MEMBER_MB``.
    max_json_bytes : int, optional
        Bound on a JSON file parsed whole, or on one JSON line; default 256 MB or ``MEDEVAL_MAX_JSON_MB``
        (:mod:`medeval_kit.readers._limits`).

    Returns
    -------
    ReadResult
        The validated tables (``None`` where the file has no such data), the records read and the
        rows dropped with their reasons.

    Raises
    ------
    ReaderError
        A missing, broken or hostile file (never another exception type); the message names the
        file, the record and the field.
    """
    p = Path(path)
    src = str(p)
    suffix = p.suffix.lower()
    if suffix not in (".eval", ".json"):
        raise ReaderError(f"{src}: an Inspect log ends in .eval or .json; got {suffix or 'no suffix'!r}")
    limits = (member_limit(max_member_bytes), json_limit(max_json_bytes))
    header, samples, reader = _load(p, use_inspect_ai, *limits)
    tally = Tally("inspect", src, record_unit="samples (sample x epoch)")
    return _convert(header, samples, tally, reader)


# --------------------------------------------------------------------------- loading
def _load(p: Path, use_inspect_ai: bool | None, member_max: int, json_max: int
          ) -> tuple[dict, list[tuple[str, dict]], str]:
    if not p.exists():
        raise ReaderError(f"{p}: file not found")
    if use_inspect_ai is not False:
        try:
            from inspect_ai.log import read_eval_log  # type: ignore[import-not-found]
        except ImportError:
            if use_inspect_ai:
                raise ReaderError(f"{p}: use_inspect_ai=True but inspect_ai is not installed; "
                                  "pip install 'medeval_kit[inspect]'") from None
        else:
            _precheck(p, member_max, json_max)
            return _load_with_inspect_ai(p, read_eval_log)
    if p.suffix.lower() == ".json":
        log = load_json(p, json_max)
        if not isinstance(log, dict) or "eval" not in log:
            raise ReaderError(f"{p}: not an Inspect log: expected a JSON object with 'eval' and 'samples' "
                              f"(got {type(log).__name__}"
                              + (f" with keys {sorted(log)[:8]}" if isinstance(log, dict) else "") + ")")
        samples = log.get("samples") or []
        if not isinstance(samples, list):
            raise where_error(str(p), "log", "samples", f"expected a list, got {type(samples).__name__}")
        return log, [(f"samples[{i}]", _slim(s)) for i, s in enumerate(samples)], "built-in JSON reader"
    return _load_zip(p, member_max)


def _precheck(p: Path, member_max: int, json_max: int) -> None:
    """Refuse, before inspect_ai reads it whole, a log larger than the limits (declared member sizes)."""
    if p.suffix.lower() == ".json":
        read_limit = p.stat().st_size
        if read_limit > json_max:
            raise ReaderError(f"{p}: {read_limit} bytes is more than max_json_bytes={json_max}")
        return
    try:
        with zipfile.ZipFile(p) as zf:
            for info in zf.infolist():
                if info.file_size > member_max:
                    raise ReaderError(f"{p}: member {info.filename}: declares {info.file_size} bytes, more than "
                                      f"max_member_bytes={member_max}")
    except (zipfile.BadZipFile, OSError, ValueError):
        raise ReaderError(f"{p}: not a zip archive; an .eval log is a zip (is the file truncated?)") from None


def _load_with_inspect_ai(p: Path, read_eval_log) -> tuple[dict, list[tuple[str, dict]], str]:
    try:
        log = read_eval_log(str(p), resolve_attachments=False)
    except Exception as exc:  # the package's own errors name little; add the file
        raise ReaderError(f"{p}: inspect_ai could not read the log ({type(exc).__name__}: {exc})") from None
    header = log.model_dump(exclude={"samples"})
    keep = {"id", "epoch", "input", "target", "output", "scores", "error", "metadata"}
    samples = [(f"sample {s.id!r} epoch {s.epoch}", s.model_dump(include=keep)) for s in (log.samples or [])]
    import inspect_ai  # type: ignore[import-not-found]

    return header, samples, f"inspect_ai {getattr(inspect_ai, '__version__', '?')} read_eval_log"


_KEEP = ("id", "epoch", "input", "target", "scores", "error")


def _slim(s: Any) -> Any:
    """Only the parts of a sample the conversion uses (messages and events can be most of a log)."""
    if not isinstance(s, dict):
        return s
    out = {k: s[k] for k in _KEEP if k in s}
    o = s.get("output")
    if isinstance(o, dict):
        out["output"] = {"completion": o.get("completion")}
    return out


def _load_zip(p: Path, limit: int) -> tuple[dict, list[tuple[str, dict]], str]:
    try:
        zf = zipfile.ZipFile(p)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError):
        raise ReaderError(f"{p}: not a zip archive; an .eval log is a zip (is the file truncated?)") from None
    with zf, p.open("rb") as raw:
        names = zf.namelist()
        reader = MemberReader(zf, raw, p, limit)

        def member(name: str, obj: bool = True) -> Any:
            v = parse_json(reader.read(name), f"{p}: member {name}")
            if obj and not isinstance(v, dict):
                raise ReaderError(f"{p}: member {name}: expected a JSON object, got {type(v).__name__}")
            return v

        if "header.json" in names:
            header = member("header.json")
        elif "_journal/start.json" in names:
            header = member("_journal/start.json")
            header.setdefault("status", "started")
        elif "start.json" in names:  # logs written before header.json existed
            header = member("start.json")
            if "results.json" in names:
                header.update(member("results.json"))
        else:
            raise ReaderError(f"{p}: not an Inspect .eval log: no header.json, _journal/start.json or start.json "
                              f"in the zip (members: {names[:8]})")
        sample_names = [n for n in names if n.startswith("samples/") and n.endswith(".json")]
        samples = [(f"sample member {n}", _slim(member(n, obj=False))) for n in sample_names]
    samples.sort(key=lambda t: (_epoch(t[1]), str(t[1].get("id")) if isinstance(t[1], dict) else ""))
    return header, samples, "built-in .eval reader"


def _epoch(s: Any) -> int:
    e = s.get("epoch", 0) if isinstance(s, dict) else 0
    return e if isinstance(e, int) else 0


# --------------------------------------------------------------------------- grader
def _model_name(m: Any) -> str | None:
    """A model option as recorded: a string, a ``{model: ...}`` object (Model passed), or a list."""
    if isinstance(m, str):
        return m
    if isinstance(m, dict):
        name = m.get("model") or m.get("name")
        return name if isinstance(name, str) else None
    if isinstance(m, list):
        names = [_model_name(x) for x in m]
        names = [n for n in names if n]
        return " + ".join(names) if names else None
    return None


def _list_field(obj: dict, key: str, src: str, prefix: str) -> list:
    """``obj[key]`` when it is a list; null or absent is an empty list; another type is an error."""
    v = obj.get(key)
    if v is None:
        return []
    if not isinstance(v, list):
        raise where_error(src, "log header", prefix + key, f"expected a list, got {type(v).__name__}")
    return v


def _scorer_options(header: dict, src: str) -> dict[str, dict]:
    """Scorer name -> options, from ``eval.scorers`` and ``results.scores[].params``."""
    out: dict[str, dict] = {}
    res = header.get("results") or {}
    for sc in _list_field(res, "scores", src, "results.") if isinstance(res, dict) else []:
        if isinstance(sc, dict):
            opts = sc.get("params") if isinstance(sc.get("params"), dict) else {}
            for key in (sc.get("name"), sc.get("scorer")):
                if isinstance(key, str):
                    out.setdefault(key, opts)
    for sc in _list_field(header["eval"], "scorers", src, "eval."):
        if isinstance(sc, dict) and isinstance(sc.get("name"), str):
            out[sc["name"]] = sc.get("options") if isinstance(sc.get("options"), dict) else {}
    return out


def _grader(name: str, opts: dict, model_graded: bool, header: dict) -> tuple[str | None, str]:
    """(grader model, how it was found) following Inspect's documented precedence."""
    m = _model_name(opts.get("model"))
    if m:
        return m, "scorer option 'model'"
    roles = (header.get("eval") or {}).get("model_roles") or {}
    role = opts.get("model_role", "grader")
    if model_graded and isinstance(role, str) and isinstance(roles, dict) and role in roles:
        m = _model_name(roles[role])
        if m:
            return m, f"model role {role!r}"
    if model_graded:
        ev = (header.get("eval") or {}).get("model")
        if isinstance(ev, str):
            return ev, "the evaluated model (Inspect's default grader)"
    return None, "none recorded"


# --------------------------------------------------------------------------- values
def _value(v: Any) -> tuple[str | None, float, bool]:
    """(verdict, score, has_value) of one scalar Inspect score value."""
    if is_missing(v):
        return None, math.nan, False
    if isinstance(v, bool):
        return None, float(v), True
    if isinstance(v, (int, float)):
        return None, float(v), not math.isnan(float(v))
    if isinstance(v, str):
        if v in _LETTERS:
            return _LETTERS[v], _LETTER_SCORE[v], True
        low = v.strip().lower()
        if low in ("yes", "true"):
            return v, 1.0, True
        if low in ("no", "false"):
            return v, 0.0, True
        try:
            f = float(v)
            return v, f if math.isfinite(f) else math.nan, True
        except ValueError:
            return v, math.nan, True
    return None, math.nan, False


def _text(x: Any) -> str | None:
    """Sample input/target as text: chat messages joined as ``role: content``, lists joined."""
    if is_missing(x):
        return None
    if isinstance(x, str):
        return x
    if isinstance(x, list):
        parts = []
        for m in x:
            if isinstance(m, dict) and "content" in m:
                c = m["content"]
                if isinstance(c, list):
                    c = "\n".join(str(b.get("text", "")) for b in c if isinstance(b, dict) and b.get("type") == "text")
                parts.append(f"{m.get('role', '')}: {c}" if m.get("role") else str(c))
            else:
                parts.append(str(m))
        return "\n\n".join(parts)
    return as_text(x)


# --------------------------------------------------------------------------- conversion
def _log_meta(header: dict, tally: Tally) -> tuple[str, str | None, str | None]:
    """(task, evaluated model, dataset name) of the log; a run that did not finish is noted."""
    ev = header.get("eval")
    if not isinstance(ev, dict):
        raise where_error(tally.source, "log header", "eval", "missing or not an object; is this an Inspect log?")
    task = ev.get("task") if isinstance(ev.get("task"), str) else "inspect"
    model = ev.get("model") if isinstance(ev.get("model"), str) else None
    dataset = ev["dataset"].get("name") if isinstance(ev.get("dataset"), dict) else None
    dataset = dataset if isinstance(dataset, str) else None
    status = header.get("status")
    if status and status != "success":
        tally.note(f"log status is {status!r}: the run did not finish; samples present were read")
    return task, model, dataset


def _graded_scorers(options: dict[str, dict], samples: list[tuple[str, dict]]) -> set[str]:
    """The model-graded scorers: a grading transcript in any sample's score metadata, or a model /
    model_role option; decided over the whole log so every row of a scorer has one judge."""
    graded = {n for n, o in options.items() if "model" in o or "model_role" in o}
    for _, s in samples:
        for n, sc in ((s.get("scores") or {}) if isinstance(s, dict) and isinstance(s.get("scores"), dict) else {}).items():
            if isinstance(sc, dict) and isinstance(sc.get("metadata"), dict) and "grading" in sc["metadata"]:
                graded.add(n)
    return graded


def _sample_key(src: str, where: str, s: Any) -> tuple[str, int]:
    """(item id, epoch) of one sample, checked."""
    if not isinstance(s, dict):
        raise where_error(src, where, None, f"expected a sample object, got {type(s).__name__}")
    if "id" not in s or "epoch" not in s:
        raise where_error(src, where, "id" if "id" not in s else "epoch", "missing from the sample")
    sid, epoch = s["id"], s["epoch"]
    if not isinstance(sid, (str, int)) or isinstance(sid, bool):
        raise where_error(src, where, "id", f"expected a string or integer, got {sid!r}")
    if not isinstance(epoch, int) or isinstance(epoch, bool) or not 1 <= epoch <= _MAX_EPOCH:
        raise where_error(src, where, "epoch", f"expected an integer >= 1, got {epoch!r}"
                          + ("" if not isinstance(epoch, int) or epoch < 1 else f" (at most {_MAX_EPOCH})"))
    return str(sid), epoch


def _score_rows(src: str, where: str, name: str, sc: Any, base: dict, err_msg: str | None,
                tally: Tally) -> list[dict]:
    """The judgments rows of one scorer's Score in one sample (one per key of a dict value)."""
    if sc is None:
        return [{**base, "criterion": name, "raw": None, "verdict": None, "score": math.nan,
                 "parse_status": "missing",
                 "note": f"no score: sample error: {err_msg}" if err_msg else "no score recorded"}]
    if not isinstance(sc, dict) or "value" not in sc:
        raise where_error(src, where, f"scores.{name}", "expected a Score object with a 'value'")
    value = sc["value"]
    expl = sc.get("explanation") if isinstance(sc.get("explanation"), str) else None
    common = {**base, "raw": expl, "answer": sc.get("answer") if isinstance(sc.get("answer"), str) else None}
    if isinstance(value, list):
        tally.drop("list-valued Inspect score (a list is not one judgment)", f"{where}, scores.{name}")
        return []
    rows = []
    for key, v in (value.items() if isinstance(value, dict) else [(None, value)]):
        verdict, score, has = _value(v)
        status_, note = "ok", None
        if expl and expl.startswith(_GRADE_NOT_FOUND):
            status_, note, verdict, score = "failed", "grade not found in the grader's output", None, math.nan
        elif not has:
            status_, note = "failed", "unscored (value NaN/null)" if is_missing(v) else f"unusable value {v!r}"
        rows.append({**common, "criterion": name if key is None else f"{name}/{key}", "verdict": verdict,
                     "score": score, "parse_status": status_, "value_raw": None if is_missing(v) else str(v),
                     "note": note})
    return rows


def _note_graders(tally: Tally, graders: dict[str, tuple[str | None, str]], n_samples: int) -> None:
    """Say in the summary who graded each scorer (and when the log holds no samples)."""
    for name, (g, how) in graders.items():
        if g is None:
            tally.note(f"scorer {name!r}: no grader model recorded (not model-graded, or not recorded); judge = scorer name")
        else:
            tally.note(f"scorer {name!r}: grader {g} ({how})")
    if not n_samples:
        tally.note("the log holds no samples (header only, or the run logged no samples)")


def _convert(header: dict, samples: list[tuple[str, dict]], tally: Tally, reader: str) -> ReadResult:
    src = tally.source
    task, model, dataset = _log_meta(header, tally)
    options = _scorer_options(header, src)
    declared = list(options)
    graded = _graded_scorers(options, samples)
    graders: dict[str, tuple[str | None, str]] = {}

    judg, items, resps, seen = [], {}, {}, set()
    for where, s in samples:
        tally.record()
        item, epoch = _sample_key(src, where, s)
        if (item, epoch) in seen:
            tally.drop("duplicate sample (same id and epoch; kept the first)", where)
            continue
        seen.add((item, epoch))
        err = s.get("error")
        err_msg = (err.get("message") if isinstance(err, dict) else err) if err else None
        err_msg = None if err_msg is None else err_msg if isinstance(err_msg, str) else as_text(err_msg)
        if item not in items:
            items[item] = {"item": item, "dataset": dataset or task, "question": _text(s.get("input")),
                           "answer": _text(s.get("target"))}
        out = s.get("output") if isinstance(s.get("output"), dict) else {}
        completion = out.get("completion") if isinstance(out.get("completion"), str) else None
        resps[(item, epoch)] = {"item": item, "model": model or "model", "repeat": epoch - 1,
                                "text": completion if (completion or not err_msg) else None,
                                "epoch": epoch, "error": err_msg}
        scores = s.get("scores")
        if scores is None:
            scores = {}
        if not isinstance(scores, dict):
            raise where_error(src, where, "scores", f"expected an object {{name: score}}, got {type(scores).__name__}")
        for name in dict.fromkeys(declared + list(scores)):
            if name not in graders:
                graders[name] = _grader(name, options.get(name, {}), name in graded, header)
            grader = graders[name][0]
            base = {"item": item, "protocol": "reference", "order": "single", "repeat": epoch - 1, "epoch": epoch,
                    "scorer": name, "model": model, "task": task, "judge": grader or name, "grader_model": grader}
            judg += _score_rows(src, where, name, scores.get(name), base, err_msg, tally)

    _note_graders(tally, graders, len(samples))
    cols = ["epoch", "scorer", "grader_model", "model", "answer", "value_raw", "task", "note"]
    return tally.result(
        "judgments", reader,
        judgments=tally.frame(judg, "judgments", columns=cols),
        items=tally.frame(list(items.values()), "items"),
        responses=tally.frame(list(resps.values()), "responses", columns=["epoch", "error"]),
    )
