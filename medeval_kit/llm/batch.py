"""Provider batch engines: the OpenAI Batch API and Anthropic Message Batches.

Flow: ``submit`` (uncached requests only; one line per distinct cache key, ``custom_id`` = key),
persist the batch ids in the cache's ``batches`` table, ``poll``, then ``collect`` the results
into the same cache. Everything needed to resume lives in the SQLite file, so after an
interruption ``run_batch`` with the same requests submits nothing twice: it polls the pending
batches and collects them. Batch calls are priced at the table's ``batch_discount``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from .calllog import append_call_log
from .cost import batch_discount, cost_of, price_for
from .errors import BudgetError, LLMError
from .progress import progress_bar
from .providers.base import BATCH_COLLECTED, BATCH_FINAL, BATCH_PENDING, BATCH_READY, BatchAPI
from .record import cache_entry, error_response, response_from_row
from .registry import provider_class, provider_names
from .secrets import get_logger, redact, scrub_errors
from .types import ModelSpec, Request, Response

log = get_logger(__name__)


def _provider(client, spec: ModelSpec) -> BatchAPI:
    """The client's provider for ``spec``, if it has a batch API; else LLMError naming those that do."""
    p = client.provider(spec)
    if not isinstance(p, BatchAPI):
        batched = " and ".join(f"'{n}/...'" for n in provider_names() if issubclass(provider_class(n), BatchAPI))
        raise LLMError(
            f"{spec}: batch APIs exist for {batched} only. For local models at scale, "
            "serve them with vLLM (or llama.cpp server) and use 'openai/<model>@http://host:port/v1' with run()"
        )
    return p


def _ceilings(items: list[tuple[str, Request, ModelSpec]], client) -> dict[str, float]:
    """Per key, the proven ceiling of a batch item at the batch price (see ``Budget``)."""
    out: dict[str, float] = {}
    for k, r, s in items:
        price = price_for(s)
        if price is None:
            raise BudgetError(f"a budget is set but there is no price for {s.id}: add it to data/prices.yaml "
                              "(or drop the budget)")
        out[k] = price.cost(client.provider(s).prompt_token_bound(r), int(r.max_tokens),
                            discount=batch_discount(s.provider))
    return out


def _budgets(client) -> list[Any]:
    """The caps a batch must fit: the client's Budget and the run ledger (``MEDEVAL_RUN_BUDGET_USD``)."""
    return [b for b in (client.budget, getattr(client, "ledger", None)) if b is not None]


def _commit(budgets: list[Any], amount: float) -> None:
    """Count ``amount`` as unconfirmed in every budget, or in none (BudgetError)."""
    done: list[Any] = []
    for b in budgets:
        why = b.commit(amount)
        if why is not None:
            for d in done:
                d.uncommit(amount)
            raise BudgetError(f"budget: batch not submitted: {why}")
        done.append(b)


def _spec_of(row: dict[str, Any]) -> ModelSpec:
    return ModelSpec(row["provider"], row["model"], row["base_url"] or None)


def _new_items(client, requests: Sequence[Request]) -> dict[str, list[tuple[str, Request, ModelSpec]]]:
    """The requests neither cached nor in a pending batch, one per key, grouped by model string."""
    cache = client.cache
    specs = [client._spec_for(r) for r in requests]
    keys = [client._key(r, s) for r, s in zip(requests, specs)]  # with the wire options (schema_format)
    cached = set(cache.get_many(keys))
    pending = {k for b in cache.batches() if b["status"] not in BATCH_FINAL for k in b["keys"]}
    groups: dict[str, list[tuple[str, Request, ModelSpec]]] = {}
    seen: set[str] = set()
    for r, s, k in zip(requests, specs, keys):
        if k in cached or k in pending or k in seen:
            continue
        seen.add(k)
        groups.setdefault(str(s), []).append((k, r, s))
    return groups


def _submit_chunk(client, provider: BatchAPI, sdk: Any, chunk: list[tuple[str, Request, ModelSpec]],
                  ceilings: dict[str, float]) -> str:
    """Submit one batch (its ceiling counted as unconfirmed first, under a budget); return its id."""
    spec, budgets = chunk[0][2], _budgets(client)
    canon = {k: client.canonical(r, s) for k, r, s in chunk}
    # a submitted batch is billed later: its ceiling counts as unconfirmed until it is collected
    chunk_ceilings = {k: ceilings[k] for k, _, _ in chunk} if budgets else {}
    _commit(budgets, sum(chunk_ceilings.values()))
    try:
        batch_id, detail = provider.batch_submit(sdk, [(k, r) for k, r, _ in chunk])
        detail["requests"] = canon
    except BaseException:
        for b in budgets:
            b.uncommit(sum(chunk_ceilings.values()))
        raise
    for b in budgets:
        b.batches[batch_id] = chunk_ceilings
    client.cache.save_batch(batch_id, provider=spec.provider, model=spec.name, base_url=spec.base_url,
                            status=BATCH_PENDING, keys=[k for k, _, _ in chunk], detail=detail)
    log.info("submitted batch %s: %d requests to %s", batch_id, len(chunk), spec)
    return batch_id


@scrub_errors  # an SDK error (a 401 echoing the key...) reaches the caller without any key
def submit_batch(client, requests: Sequence[Request], *, max_per_batch: int = 10_000) -> list[str]:
    """Submit the requests that are neither cached nor in a pending batch; return new batch ids."""
    if not client.cache.writes:
        raise LLMError(f"batch results are collected into the cache, but cache_mode is {client.cache.mode!r}: "
                       "use 'use'")
    groups = _new_items(client, requests)
    budgets = _budgets(client)
    ceilings: dict[str, float] = {}
    if budgets and groups:  # the whole submission must fit under the cap before any is sent
        ceilings = _ceilings([it for items in groups.values() for it in items], client)
        _commit(budgets, sum(ceilings.values()))
        for b in budgets:
            b.uncommit(sum(ceilings.values()))  # counted again chunk by chunk, as they are submitted
    ids: list[str] = []
    for items in groups.values():
        provider = _provider(client, items[0][2])
        sdk = provider.make_client(sync=True)
        for i in range(0, len(items), max_per_batch):
            ids.append(_submit_chunk(client, provider, sdk, items[i:i + max_per_batch], ceilings))
    return ids


@scrub_errors
def poll_batches(client, batch_ids: Sequence[str] | None = None):
    """Refresh the status of pending batches; return a DataFrame of all batches in the cache."""
    import pandas as pd

    cache = client.cache
    for b in cache.batches():
        if b["status"] != BATCH_PENDING or (batch_ids is not None and b["batch_id"] not in batch_ids):
            continue
        spec = _spec_of(b)
        provider = _provider(client, spec)
        sdk = provider.make_client(sync=True)
        detail = b["detail"]
        status, remote, files = provider.batch_poll(sdk, b["batch_id"])
        detail.update(files)
        detail["remote_status"] = remote
        cache.save_batch(b["batch_id"], provider=b["provider"], model=b["model"], base_url=b["base_url"],
                         status=status, keys=b["keys"], detail=detail)
    rows = [{"batch_id": b["batch_id"], "model": f"{b['provider']}/{b['model']}", "status": b["status"],
             "remote_status": b["detail"].get("remote_status"), "n": b["n"],
             "n_ok": b["detail"].get("n_ok"), "n_failed": b["detail"].get("n_failed"),
             "created_utc": b["created_utc"], "updated_utc": b["updated_utc"]} for b in cache.batches()]
    return pd.DataFrame(rows, columns=["batch_id", "model", "status", "remote_status", "n", "n_ok", "n_failed",
                                       "created_utc", "updated_utc"])


@scrub_errors
def collect_batches(client, batch_ids: Sequence[str] | None = None) -> int:
    """Store the results of finished batches in the cache; return how many entries were stored."""
    cache = client.cache
    stored = 0
    for b in cache.batches(status=BATCH_READY):
        if batch_ids is not None and b["batch_id"] not in batch_ids:
            continue
        spec = _spec_of(b)
        provider = _provider(client, spec)
        sdk = provider.make_client(sync=True)
        detail = b["detail"]
        canon: dict[str, dict[str, Any]] = detail.get("requests", {})
        results = provider.batch_results(sdk, b["batch_id"], detail)  # key, raw, error
        entries, errors = [], {}
        for key, raw, err in results:
            c = canon.get(key)
            if c is None:
                continue
            if err is not None:
                errors[key] = err
                continue
            try:
                comp = provider.batch_completion(raw, c)
            except LLMError as exc:
                errors[key] = redact(str(exc))
                continue
            # no content (a refusal, an empty message) is a paid reply: stored as "" (parse "failed")
            cost = cost_of(spec, comp.prompt_tokens, comp.completion_tokens, batch=True)
            entries.append(cache_entry(key, spec, c, comp, cost, source="batch"))
        cache.put_many(entries)
        stored += len(entries)
        for budget in _budgets(client):
            if b["batch_id"] in budget.batches:  # submitted under this budget (or run budget)
                budget.settle_batch(budget.batches.pop(b["batch_id"]), {e["key"]: e["cost_usd"] for e in entries},
                                    set(errors))
        detail.update(n_ok=len(entries), n_failed=len(errors), errors=errors)
        cache.save_batch(b["batch_id"], provider=b["provider"], model=b["model"], base_url=b["base_url"],
                         status=BATCH_COLLECTED, keys=b["keys"], detail=detail)
        log.info("collected batch %s: %d stored, %d failed", b["batch_id"], len(entries), len(errors))
    return stored


@scrub_errors
def run_batch(client, requests: Sequence[Request], *, poll_interval: float = 30.0, timeout: float | None = None,
              progress: bool = True, max_per_batch: int = 10_000) -> list[Response]:
    """Submit (or resume), poll until every batch holding these requests is done, collect, and
    return one Response per request (in order), read from the cache.

    Items that failed inside a batch come back with ``error`` set; run ``run_batch`` again to
    resubmit just those. An interrupted call can simply be repeated: nothing is submitted twice.
    """
    if client.cache.mode == "replay":
        return client.run(requests, progress=False)
    t0 = time.perf_counter()
    specs = [client._spec_for(r) for r in requests]
    keys = [client._key(r, s) for r, s in zip(requests, specs)]
    wanted = set(keys)
    before = set(client.cache.get_many(wanted))
    submit_batch(client, requests, max_per_batch=max_per_batch)
    bar = None
    if progress:

        bar = progress_bar(total=len(wanted), desc=f"batch {client.model}", unit="req")
    while True:
        mine = [b for b in client.cache.batches() if wanted & set(b["keys"])]
        open_ids = [b["batch_id"] for b in mine if b["status"] not in BATCH_FINAL]
        if open_ids:
            poll_batches(client, open_ids)
            collect_batches(client, open_ids)
        if bar is not None:
            bar.n = len(client.cache.get_many(wanted))
            bar.refresh()
        if not [b for b in client.cache.batches() if wanted & set(b["keys"]) and b["status"] not in BATCH_FINAL]:
            break
        if timeout is not None and time.perf_counter() - t0 > timeout:
            if bar is not None:
                bar.close()
            raise LLMError(f"run_batch: batches {open_ids} still pending after {timeout:.0f} s; "
                           "call run_batch again later to resume (nothing is resubmitted)")
        time.sleep(poll_interval)
    if bar is not None:
        bar.close()
    rows = client.cache.get_many(keys)
    errors: dict[str, str] = {}
    for b in client.cache.batches():
        errors.update(b["detail"].get("errors") or {})
    out = []
    for r, s, k in zip(requests, specs, keys):
        if k in rows:
            resp = response_from_row(rows[k], r, s)
            if k not in before:  # paid in this call (at the batch price)
                resp.cached = False
                resp.cost_usd = rows[k]["cost_usd"] if rows[k]["cost_usd"] is not None else float("nan")
            out.append(resp)
        else:
            out.append(error_response(r, s, k, f"batch item failed: {errors.get(k, 'no result')}", 1))
    paid = {o.key: o.cost_usd for o in out if not o.cached and o.error is None}
    append_call_log(client.model, out, 0, float(sum(paid.values())))  # for the study runner
    return out
