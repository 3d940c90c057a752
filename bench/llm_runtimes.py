"""Compare in-process runtimes for the embedded SmolLM2-135M-Instruct (Q4_1 GGUF).

llama.cpp (the package default, through ``rag_graphs.llm.models``) against transformers
(GGUF dequantised to fp32, through ``ChatHuggingFace``). Each runtime runs in its own
subprocess so peak RSS is its own. The transformers row needs ``pip install gguf``.

Run: ``.venv/bin/python bench/llm_runtimes.py``.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time

PROMPTS = [
    "Context: Adrian Holovaty co-created Django in 2003. Question: Who created Django? Answer:",
    "Context: Korvik is a fishing town in the province of Asterra. "
    "Question: Which province is Korvik in? Answer:",
    "Context: The Eiffel Tower is 330 metres tall. Question: How tall is the Eiffel Tower? Answer:",
    "Context: Springfield is the capital of Illinois. Question: What is the capital of Illinois? Answer:",
    "Context: Photosynthesis produces glucose and oxygen. "
    "Question: What does photosynthesis produce? Answer:",
]


def _load(runtime: str):
    if runtime == "llama.cpp":
        from rag_graphs.llm.models import load_chat_model

        return load_chat_model("embedded", max_tokens=128), None
    import torch
    from langchain_huggingface import ChatHuggingFace, HuggingFacePipeline
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer, pipeline
    from transformers.modeling_gguf_pytorch_utils import load_gguf_checkpoint

    from rag_graphs.llm.models import embedded_model_path

    path = embedded_model_path()
    tok = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    cfg = AutoConfig.from_pretrained(str(path.parent), gguf_file=path.name)
    model = AutoModelForCausalLM.from_config(cfg, dtype=torch.float32)
    state = load_gguf_checkpoint(str(path), return_tensors=True, model_to_load=model)["tensors"]
    model.load_state_dict(state, strict=False)
    model.tie_weights()
    pipe = pipeline(
        "text-generation",
        model=model,
        tokenizer=tok,
        max_new_tokens=128,
        do_sample=False,
        return_full_text=False,
    )
    return ChatHuggingFace(llm=HuggingFacePipeline(pipeline=pipe), tokenizer=tok), tok


def worker(runtime: str) -> None:
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t = time.perf_counter()
    model, tok = _load(runtime)
    load_s = time.perf_counter() - t
    model.invoke("warm up")
    tokens, t = 0, time.perf_counter()
    answers = []
    for prompt in PROMPTS:
        reply = model.invoke(prompt)
        answers.append(reply.content)
        meta = reply.usage_metadata
        tokens += (
            meta["output_tokens"] if meta else len(tok(reply.content, add_special_tokens=False)["input_ids"])
        )
    gen_s = time.perf_counter() - t
    deterministic = all(model.invoke(p).content == a for p, a in zip(PROMPTS[:2], answers[:2], strict=True))
    rss = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) / 1024
    print(
        json.dumps(
            {
                "runtime": runtime,
                "load_s": load_s,
                "tokens_per_s": tokens / gen_s,
                "peak_rss_increase_mb": rss,
                "deterministic": deterministic,
            }
        )
    )


def main() -> None:
    print("| runtime | load (s) | tokens/s | peak RSS increase (MB) | deterministic |\n|---|---|---|---|---|")
    for runtime in ("llama.cpp", "transformers"):
        proc = subprocess.run([sys.executable, __file__, "--worker", runtime], capture_output=True, text=True)
        if proc.returncode != 0:
            print(f"| {runtime} | failed: {proc.stderr.strip().splitlines()[-1][:120]} | | | |")
            continue
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        print(
            f"| {runtime} | {r['load_s']:.2f} | {r['tokens_per_s']:.1f} | {r['peak_rss_increase_mb']:.0f} "
            f"| {'yes' if r['deterministic'] else 'no'} |"
        )


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--worker":
        worker(sys.argv[2])
    else:
        main()
