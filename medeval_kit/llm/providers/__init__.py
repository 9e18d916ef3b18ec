"""LLM providers, one file each, registered by name with ``@provider("<name>")`` (see
:mod:`medeval_kit.llm.registry`): ``local`` (llama.cpp in process), ``openai`` (and any
OpenAI-compatible server), ``anthropic`` and ``replay`` (the cache only). ``base`` says what a provider
is (and what a batch API adds), ``http`` what the HTTP providers share, ``failures`` how a failed
attempt is classified. Every module of this folder is imported here, so adding a provider is one file
(a registered Provider subclass) and a test. SDKs are imported lazily.
"""

from __future__ import annotations

import importlib
import pkgutil

from ..registry import key_options, make_provider, provider, provider_class, provider_names, unregister
from .base import BATCH_FINAL, BATCH_PENDING, BATCH_READY, BatchAPI, Completion, Provider
from .failures import Failure, classify, failure, status_retryable
from .local import load_llama, local_model_path

for _module in pkgutil.iter_modules(__path__):  # each provider file registers its class on import
    importlib.import_module(f"{__name__}.{_module.name}")

__all__ = [
    "BATCH_FINAL", "BATCH_PENDING", "BATCH_READY", "BatchAPI", "Completion", "Failure", "Provider", "classify",
    "failure", "key_options", "load_llama", "local_model_path", "make_provider", "provider", "provider_class",
    "provider_names", "status_retryable", "unregister",
]
