"""What every provider is: :class:`Provider` (one coroutine, ``acomplete(request) -> Completion``) and,
for providers with a batch API, the :class:`BatchAPI` methods the batch engine calls.

Providers do no retrying: the executor owns retries, backoff, timeouts and rate limits.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..cost import prompt_token_bound
from ..types import ModelSpec, Request

# States of a submitted batch in the cache's ``batches`` table (see ``llm/batch.py``).
BATCH_PENDING = "pending"
BATCH_READY = "ready"
BATCH_COLLECTED = "collected"
BATCH_FINAL = (BATCH_COLLECTED, "failed", "expired", "cancelled")


@dataclass(slots=True)
class Completion:
    """What a provider returns for one successful call.

    Parameters
    ----------
    text : str or None
        The reply's text.
    prompt_tokens, completion_tokens : int
        The usage the provider reported.
    finish_reason : str, optional
        Why generation stopped (``stop``, ``length`` ...).
    response_id : str, optional
        The provider's id of the reply.
    raw : dict
        The provider's reply as received (secrets redacted before it is stored).
    found : dict of str to str
        The options the provider settled for an option left to ``"auto"`` (e.g.
        ``{"schema_format": "json_object"}``); the client records them for the endpoint and keys the reply
        by them (see ``Provider.learned_options``).
    raw_text : str, optional
        ``raw`` as the JSON text received, when the provider has it: stored as it is instead of encoding
        ``raw`` again.
    """

    text: str | None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: str | None = None
    response_id: str | None = None
    raw: dict[str, Any] = field(default_factory=dict)
    found: dict[str, str] = field(default_factory=dict)
    raw_text: str | None = None


class Provider:
    """Base class of the LLM providers.

    A subclass is registered with ``@provider("<name>")`` (which sets ``name``) or through the
    ``medeval_kit.providers`` entry point, sets ``default_concurrency`` and implements ``acomplete``.
    Class attributes: ``uses_network`` (the executor then adds a safety-net timeout), ``key_env`` (the
    default API-key variable; its value is redacted everywhere), ``accepts_base_url`` (model strings
    ``<name>/<model>@http://...`` allowed), ``example`` (a model string for help texts) and
    ``learned_options`` (options that may be ``"auto"``: the provider finds the value that works per
    endpoint and reports it in ``Completion.found``).

    Parameters
    ----------
    spec : ModelSpec
        The parsed model string.
    **options
        Provider options (see :func:`get_client`).
    """

    name = "base"
    default_concurrency = 8
    uses_network = True
    key_env: str | None = None
    accepts_base_url = False
    example = ""
    learned_options: tuple[str, ...] = ()

    def __init__(self, spec: ModelSpec, **options: Any) -> None:
        self.spec = spec
        self.options = options

    @property
    def limit_key(self) -> str:
        """Requests sharing this key share concurrency and rate limits."""
        return f"{self.spec.provider}@{self.spec.base_url or 'default'}"

    @classmethod
    def key_options(cls, options: dict[str, Any], request: Request) -> dict[str, Any]:
        """The provider options that change ``request`` on the wire, for its cache key.

        Only non-default values are returned, so the key of a request whose wire form is the default
        one is the key it always had. Options that do not change what is sent (timeouts, transport,
        pools, key variable, base URLs, llama.cpp threads and context size) are never in the key.
        """
        return {}

    async def open(self) -> None:
        """Called once per run, inside the running event loop."""

    async def aclose(self) -> None:
        """Called once at the end of a run (also on error or cancellation)."""

    async def acomplete(self, request: Request) -> Completion:  # pragma: no cover - abstract
        """Send ``request`` once; return the Completion or raise (see ``providers.failures``)."""
        raise NotImplementedError

    def token_counter(self) -> Callable[[str], int] | None:
        """``text -> number of tokens`` with the provider's own tokenizer when it is installed, else
        None (the budget then uses the byte bound of :func:`~medeval_kit.llm.cost.prompt_token_bound`)."""
        return None

    def prompt_token_bound(self, request: Request) -> int:
        """A proven upper bound of the prompt tokens this provider can bill for ``request``."""
        return prompt_token_bound(request, count=self.token_counter())


class BatchAPI:
    """The methods of a provider with a batch API (mixed into its Provider class); ``sdk`` is the
    provider's synchronous SDK client (``make_client(sync=True)``)."""

    def make_client(self, sync: bool = False) -> Any:  # pragma: no cover - abstract
        """Return the provider's SDK client (synchronous with ``sync``)."""
        raise NotImplementedError

    def batch_submit(self, sdk: Any, items: list[tuple[str, Request]]) -> tuple[str, dict[str, Any]]:
        """Submit ``(custom_id, request)`` items as one batch; return its id and what to keep about it."""
        raise NotImplementedError  # pragma: no cover - abstract

    def batch_poll(self, sdk: Any, batch_id: str) -> tuple[str, str, dict[str, Any]]:
        """Return a batch's state (one of ``BATCH_PENDING``, ``BATCH_READY`` or a final state), its
        status as the provider says it, and details to keep (result file ids)."""
        raise NotImplementedError  # pragma: no cover - abstract

    def batch_results(self, sdk: Any, batch_id: str, detail: dict[str, Any]
                      ) -> list[tuple[str, dict[str, Any] | None, str | None]]:
        """Return ``(custom_id, raw reply or None, error or None)`` for every item of a finished batch."""
        raise NotImplementedError  # pragma: no cover - abstract

    def batch_completion(self, raw: dict[str, Any], canonical: dict[str, Any]) -> Completion:
        """Return the Completion of one batch reply; ``canonical`` is the request as stored."""
        raise NotImplementedError  # pragma: no cover - abstract
