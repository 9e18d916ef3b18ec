"""Prices as dated data (``data/prices.yaml``), cost of a call, and estimates before a run."""

from __future__ import annotations

import fnmatch
import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from medeval_kit import paths
from medeval_kit.errors import DataFileError

from .types import ModelSpec, Request, parse_model


def default_prices_path() -> Path:
    """Return the price table, ``data/prices.yaml`` of the project or else of the toolkit
    (:func:`medeval_kit.paths.prices_path`)."""
    return paths.prices_path()


@dataclass(frozen=True, slots=True)
class Price:
    """USD per million tokens for one model pattern, with the date it was checked.

    Parameters
    ----------
    pattern : str
        A shell pattern over ``provider/name`` (e.g. ``openai/gpt-4o-mini*``).
    input, output : float
        USD per million prompt and completion tokens.
    as_of : str
        The date the price was read (ISO).
    source : str
        Where it was read (a URL).
    """

    pattern: str
    input: float
    output: float
    as_of: str
    source: str

    def cost(self, prompt_tokens: int, completion_tokens: int, *, discount: float = 1.0) -> float:
        return discount * (prompt_tokens * self.input + completion_tokens * self.output) / 1e6


SELF_HOSTED = Price("openai/*@<base_url>", 0.0, 0.0, "n/a", "self-hosted OpenAI-compatible server")


@lru_cache(maxsize=8)
def _load(path: str, mtime: float) -> tuple[tuple[Price, ...], dict[str, float]]:
    import yaml

    try:
        with open(path, encoding="utf-8") as fh:
            data = yaml.safe_load(fh) or {}
    except OSError as exc:
        raise DataFileError(f"{path}: cannot read the price table ({exc})") from exc
    sources = data.get("sources") or {}
    prices = []
    for i, e in enumerate(data.get("models") or []):
        try:
            prices.append(Price(str(e["model"]), float(e["input"]), float(e["output"]),
                                str(e.get("as_of", "unknown")), str(sources.get(e.get("source"), e.get("source", "")))))
        except (KeyError, TypeError, ValueError) as exc:
            raise DataFileError(f"{path}: models[{i}] needs model, input and output numbers ({exc})") from exc
    return tuple(prices), {k: float(v) for k, v in (data.get("batch_discount") or {}).items()}


def load_prices(path: str | os.PathLike | None = None) -> tuple[tuple[Price, ...], dict[str, float]]:
    """Read the price entries and batch discounts from the YAML table.

    Parameters
    ----------
    path : path-like, optional
        The table; default the project's ``data/prices.yaml``, else the toolkit's.

    Returns
    -------
    prices : tuple of Price
        The entries, in the table's order (the first matching pattern wins).
    discounts : dict of str to float
        The batch price factor per provider (e.g. ``{"openai": 0.5}``).

    Raises
    ------
    DataFileError
        The table does not exist.
    """
    p = str(path or default_prices_path())
    try:
        mtime = os.path.getmtime(p)
    except OSError as exc:
        raise DataFileError(f"{p}: price table not found; pass prices_path= or restore data/prices.yaml") from exc
    return _load(p, mtime)


def price_for(model: str | ModelSpec, *, prices_path: str | None = None) -> Price | None:
    """Look up the price of a model.

    Parameters
    ----------
    model : str or ModelSpec
        A model string (:func:`parse_model`).
    prices_path : str, optional
        The price table (YAML); default the project's ``data/prices.yaml``, else the toolkit's.

    Returns
    -------
    Price or None
        The first entry whose pattern matches; a zero price for a self-hosted ``...@http://`` server;
        ``None`` when the table has no entry for the model.
    """
    spec = model if isinstance(model, ModelSpec) else parse_model(model)
    if spec.base_url:
        return SELF_HOSTED
    prices, _ = load_prices(prices_path)
    for p in prices:
        if fnmatch.fnmatchcase(spec.id, p.pattern):
            return p
    return None


def batch_discount(provider: str, *, prices_path: str | None = None) -> float:
    return load_prices(prices_path)[1].get(provider, 1.0)


def cost_of(model: str | ModelSpec, prompt_tokens: int, completion_tokens: int, *, batch: bool = False,
            prices_path: str | None = None) -> float:
    """Return the cost in USD of one call.

    Parameters
    ----------
    model : str or ModelSpec
        A model string (:func:`parse_model`).
    prompt_tokens, completion_tokens : int
        The call's usage.
    batch : bool, default False
        Price at the provider's batch discount.
    prices_path : str, optional
        The price table (YAML); default the project's ``data/prices.yaml``, else the toolkit's.

    Returns
    -------
    float
        The cost; NaN when the model has no price.

    Examples
    --------
    >>> cost_of("openai/gpt-4o-mini@http://127.0.0.1:8000/v1", 1000, 200)
    0.0
    """
    spec = model if isinstance(model, ModelSpec) else parse_model(model)
    p = price_for(spec, prices_path=prices_path)
    if p is None:
        return math.nan
    disc = batch_discount(spec.provider, prices_path=prices_path) if batch else 1.0
    return p.cost(prompt_tokens, completion_tokens, discount=disc)


# Constants of the prompt-token bound (see prompt_token_bound).
BOUND_PER_MESSAGE = 8  # special tokens and separators a chat template puts around one message
BOUND_FIXED = 128  # template text outside the messages: reply priming, a default system prompt
BOUND_TOOLS = 512  # the hidden prompt a provider adds around tools / structured output


def _utf8_bytes(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def prompt_token_bound(request: Request, count: Callable[[str], int] | None = None) -> int:
    """A proven upper bound of the prompt tokens a provider can bill for ``request``.

    ``count`` is the provider's own tokenizer (``text -> tokens``) when it is installed; without it
    each text is counted as its number of UTF-8 bytes, which bounds its tokens:

    * Every tokenizer of the providers we call is a byte-level BPE (GPT-2 style: OpenAI's
      cl100k/o200k, Llama 3, Qwen, SmolLM2) or a SentencePiece BPE with byte fallback (Llama 2,
      Mistral). Their base vocabulary covers every byte and every token stands for at least one
      byte of the text (merges only ever join tokens), so a text of *b* UTF-8 bytes is at most *b*
      tokens. SentencePiece's dummy-prefix space is at most one token per text, covered below.
    * The model reads the message texts and role names, each wrapped by the chat template in a
      fixed number of special tokens and separators (OpenAI documents 3 per message and 3 to prime
      the reply; ChatML uses 4): at most ``BOUND_PER_MESSAGE`` = 8 per message; Anthropic's joining
      of system messages adds 2 bytes per join, inside the same constant.
    * Template text outside the messages (reply priming, a template's default system prompt such
      as SmolLM2's 68-byte one) is at most ``BOUND_FIXED`` = 128 tokens.
    * A schema is sent as a tool or a response format: its JSON text (at most its bytes) plus the
      provider's hidden tool prompt, at most ``BOUND_TOOLS`` = 512 tokens. This constant is the one
      part taken from documentation, not proven: Anthropic documents 313-346 tokens for its
      tool-use system prompt; OpenAI does not publish its structured-output overhead.
    * ``extra`` parameters are counted as their JSON text.

    The bound is tested against llama.cpp's tokenizer (``tests/test_llm_budget_retry.py``). A reply
    that reports more usage than this bound stops the budget (see ``Budget``).
    """
    c = count or _utf8_bytes
    n = BOUND_FIXED
    for m in request.messages:
        n += c(m["content"]) + c(m["role"]) + BOUND_PER_MESSAGE
    if request.schema is not None:
        import json

        n += c(json.dumps(request.schema, ensure_ascii=False)) + BOUND_TOOLS
    if request.extra:
        import json

        n += c(json.dumps(request.extra, ensure_ascii=False, default=str))
    return int(n)


def estimate_prompt_tokens(request: Request) -> int:
    """A typical prompt-token estimate without a tokenizer: 1 token per 3 characters + 4 per message.
    Not a bound (emoji and CJK text have more tokens): the budget uses :func:`prompt_token_bound`."""
    chars = sum(len(m["content"]) for m in request.messages)
    if request.schema is not None:
        import json

        chars += len(json.dumps(request.schema))
    return chars // 3 + 4 * len(request.messages) + 3


@dataclass(frozen=True, slots=True)
class CostEstimate:
    """What running a list of requests would cost, before any call.

    ``cost_usd`` is the typical worst case (prompts at about 3 characters a token, every reply using
    ``max_tokens``); ``cost_usd_low`` counts prompts only; ``cost_usd_max`` is the proven ceiling the budget
    reserves (prompts at :func:`~medeval_kit.llm.cost.prompt_token_bound`, replies at ``max_tokens``). The
    costs are NaN when a model has no price (``note`` says which).

    Parameters
    ----------
    n_requests : int
        Requests given.
    n_cached : int
        Already in the cache (cost nothing).
    n_to_call : int
        Requests that would be sent.
    prompt_tokens : int
        Estimated prompt tokens of those.
    max_completion_tokens : int
        Their ``max_tokens``, summed.
    cost_usd : float
        The typical worst case.
    cost_usd_low : float
        Prompts only.
    price_as_of : str
        The date of the prices used.
    note : str
        Models without a price, and other caveats.
    prompt_tokens_max : int
        The proven prompt-token bound, summed.
    cost_usd_max : float
        The proven ceiling.
    budget_usd : float, optional
        With a budget (``Client.estimate``): its cap.
    spent_usd, reserved_usd, unconfirmed_usd : float
        The budget's state: confirmed spending, calls in flight, and replies generated but lost (at their
        reserved cost).
    """

    n_requests: int
    n_cached: int
    n_to_call: int
    prompt_tokens: int
    max_completion_tokens: int
    cost_usd: float
    cost_usd_low: float
    price_as_of: str
    note: str = ""
    prompt_tokens_max: int = 0
    cost_usd_max: float = 0.0
    budget_usd: float | None = None
    spent_usd: float = 0.0
    reserved_usd: float = 0.0
    unconfirmed_usd: float = 0.0

    def summary(self) -> str:
        def fmt(x: float) -> str:
            return "unknown" if math.isnan(x) else f"${x:.4f}"

        s = (f"{self.n_requests} requests ({self.n_cached} cached, {self.n_to_call} to call): "
             f"~{self.prompt_tokens} prompt tokens, <= {self.max_completion_tokens} completion tokens; "
             f"cost between {fmt(self.cost_usd_low)} and {fmt(self.cost_usd)} (prices as of {self.price_as_of}); "
             f"ceiling {fmt(self.cost_usd_max)} (<= {self.prompt_tokens_max} prompt tokens, proven bound)")
        if self.budget_usd is not None:
            left = self.budget_usd - self.spent_usd - self.reserved_usd - self.unconfirmed_usd
            s += (f"; budget ${self.budget_usd:.4f}: spent ${self.spent_usd:.4f}, reserved ${self.reserved_usd:.4f}, "
                  f"unconfirmed ${self.unconfirmed_usd:.4f}, left ${max(0.0, left):.4f}")
        return s + (f"; {self.note}" if self.note else "")

    def to_frame(self):
        import dataclasses

        import pandas as pd

        return pd.DataFrame([dataclasses.asdict(self)])

    def _repr_html_(self) -> str:
        return f"<pre>{self.summary()}</pre>"


def estimate_cost(requests: list[Request], *, model: str | None = None, cache: Any = None,
                  batch: bool = False, prices_path: str | None = None, keys: list[str] | None = None,
                  bound: Callable[[Request, ModelSpec], int] | None = None) -> CostEstimate:
    """Estimate what running ``requests`` would cost.

    Parameters
    ----------
    requests : list of Request
        The requests; those without a model use ``model``.
    model : str, optional
        The default model string.
    cache : Cache, optional
        Cached requests cost nothing and are excluded.
    batch : bool, default False
        Price at the providers' batch discount.
    prices_path : str, optional
        The price table (YAML); default the project's ``data/prices.yaml``, else the toolkit's.
    keys : list of str, optional
        The requests' cache keys when a client's options shape them (``Client.estimate`` passes them).
    bound : callable, optional
        ``bound(request, spec) -> int``, the prompt-token bound; default
        :func:`~medeval_kit.llm.cost.prompt_token_bound`.

    Returns
    -------
    CostEstimate
        Requests, cached, to call, tokens and the three cost figures.
    """
    given_keys = keys
    specs, keys = [], []
    for r in requests:
        m = r.model or model
        if m is None:
            from .errors import RequestError

            raise RequestError("estimate_cost: a request has no model; pass model='provider/name'")
        spec = parse_model(m)
        if spec.replay:
            spec = ModelSpec(spec.provider, spec.name, spec.base_url, False)
        specs.append(spec)
        if given_keys is None:
            keys.append(r.key(spec))
    if given_keys is not None:
        keys = list(given_keys)
    cached: set[str] = set()
    if cache is not None and getattr(cache, "reads", True):
        cached = set(cache.get_many(keys))
    hi = lo = top = 0.0
    ptok = ctok = n_cached = pmax = 0
    dates, unknown = set(), set()
    seen: set[str] = set()
    for r, spec, k in zip(requests, specs, keys):
        if k in cached or k in seen:
            n_cached += k in cached
            continue
        seen.add(k)
        p_t, c_t = estimate_prompt_tokens(r), int(r.max_tokens)
        p_max = bound(r, spec) if bound is not None else prompt_token_bound(r)
        ptok, ctok, pmax = ptok + p_t, ctok + c_t, pmax + p_max
        price = price_for(spec, prices_path=prices_path)
        if price is None:
            unknown.add(spec.id)
            continue
        dates.add(price.as_of)
        disc = batch_discount(spec.provider, prices_path=prices_path) if batch else 1.0
        hi += price.cost(p_t, c_t, discount=disc)
        lo += price.cost(p_t, 0, discount=disc)
        top += price.cost(p_max, c_t, discount=disc)
    note = ""
    if unknown:
        hi = lo = top = math.nan
        note = f"no price for {', '.join(sorted(unknown))}: add it to data/prices.yaml"
    return CostEstimate(len(requests), n_cached, len(seen), ptok, ctok, hi, lo,
                        ", ".join(sorted(dates)) or "n/a", note, prompt_tokens_max=pmax, cost_usd_max=top)
