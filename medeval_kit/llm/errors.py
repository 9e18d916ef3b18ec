"""Errors raised by the LLM layer. All derive from :class:`medeval_kit.errors.MedevalError`."""

from __future__ import annotations

from medeval_kit.errors import MedevalError


class LLMError(MedevalError):
    """Base class of the errors of ``medeval_kit.llm``."""


class UnknownModelError(LLMError, ValueError):
    """A model string cannot be resolved to a provider."""


class RequestError(LLMError, ValueError):
    """A :class:`Request` is malformed (messages, roles, parameters)."""


class MissingKeyError(LLMError):
    """The API key environment variable of a provider is not set."""


class MissingDependencyError(LLMError, ImportError):
    """An optional dependency (e.g. ``llama-cpp-python``) is not installed."""


class CacheMissError(LLMError):
    """Replay mode found requests that are not in the cache.

    Parameters
    ----------
    message : str
        What is missing, for the user.
    missing : list of (str, str, str), optional
        ``(key, model, preview)`` of every missing request.
    """

    def __init__(self, message: str, missing: list[tuple[str, str, str]] | None = None) -> None:
        self.missing = list(missing or [])
        super().__init__(message)


class BudgetError(LLMError):
    """A budget cap cannot be enforced (no price for the model) or was reached."""


class ProviderError(LLMError):
    """A provider returned something unusable (an error status, a malformed body, no choices).

    Parameters
    ----------
    message : str
        What went wrong (secrets redacted).
    retryable : bool, default True
        Whether trying again may help.
    retry_after : float, optional
        Seconds the server asked to wait, if it said.
    status : int, optional
        The HTTP status of an error reply.
    broken_body : bool, default False
        A 200 whose body could not be read (not JSON, not UTF-8, no choices): the reply was generated, and
        billed, but is unusable; the executor retries it at most once (a second one in a row ends the
        request).
    usage : (int, int), optional
        ``(prompt_tokens, completion_tokens)`` when such a body still reports them (the attempt is then
        counted at that cost; else at its ceiling, as unconfirmed).
    """

    def __init__(self, message: str, *, retryable: bool = True, retry_after: float | None = None,
                 status: int | None = None, broken_body: bool = False,
                 usage: tuple[int, int] | None = None) -> None:
        self.retryable, self.retry_after, self.status = retryable, retry_after, status
        self.broken_body, self.usage = broken_body, usage
        super().__init__(message)
