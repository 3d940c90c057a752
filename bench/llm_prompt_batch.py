"""The embedded SmolLM2's prompt evaluation, 8 tokens at a time (ChatLlamaCpp's old setting)
against llama.cpp's default batch of 512: seconds and greedy replies, alternating, one process.

    HF_HUB_OFFLINE=1 nice -n 5 .venv/bin/python bench/llm_prompt_batch.py [--rounds 3]

Prompts: the five demo-corpus files (first 900 characters each) with a question about each, and
one long prompt (the first 3,000 characters of docs/architecture.md, ~850 tokens). Prints each
call's seconds and whether the two batches gave the same reply (BENCHMARKS.md, "The embedded
model's prompt batch").
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from llama_cpp import Llama

from rag_graphs.llm.models import embedded_model_path, llama_threads

ROOT = Path(__file__).resolve().parents[1]
QUESTIONS = [
    "Where was Ilsa Brandt born?",
    "Who founded the Velmora Institute?",
    "What does the Halden Foundation fund?",
    "Which province has the largest population?",
    "What is Korvik known for?",
]


def prompts() -> list[str]:
    files = sorted((ROOT / "rag_graphs" / "demo_corpus").iterdir())
    texts = [f.read_text(errors="ignore")[:900] for f in files]
    chat = "<|im_start|>system\nAnswer from the passage only.<|im_end|>\n<|im_start|>user\n{}<|im_end|>\n"
    short = [chat.format(f"Passage:\n{t}\n\nQuestion: {q}") for t, q in zip(texts, QUESTIONS, strict=False)]
    long = chat.format(
        "Read this and answer: what is the only code that talks to Milvus?\n\n"
        + (ROOT / "docs" / "architecture.md").read_text()[:3000]
    )
    return [p + "<|im_start|>assistant\n" for p in [*short, long]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--max-tokens", type=int, default=48)
    args = parser.parse_args()
    models = {
        batch: Llama(
            model_path=str(embedded_model_path()),
            n_ctx=4096,
            n_batch=batch,
            n_threads=llama_threads(),
            seed=0,
            verbose=False,
            rope_freq_base=10000.0,
            rope_freq_scale=1.0,
        )
        for batch in (8, 512)
    }
    seconds = {batch: 0.0 for batch in models}
    same = calls = 0
    for _ in range(args.rounds):
        for prompt in prompts():
            replies = {}
            for batch, model in models.items():
                model.reset()
                start = time.perf_counter()
                out = model(prompt, max_tokens=args.max_tokens, temperature=0.0, repeat_penalty=1.1)
                took = time.perf_counter() - start
                seconds[batch] += took
                replies[batch] = out["choices"][0]["text"]
                print(
                    f"batch {batch}: {len(model.tokenize(prompt.encode()))} tokens, {took:.1f} s", flush=True
                )
            calls += 1
            same += replies[8] == replies[512]
    print(f"same reply {same} of {calls}; seconds {seconds}; load {os.getloadavg()}")


if __name__ == "__main__":
    main()
