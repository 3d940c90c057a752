# rag-graphs: `make demo` and `make test` work from nothing on a fresh machine.
# They create .venv, install CPU torch first (constrained so nothing swaps in a
# CUDA build), install the package with the embedded models, and run offline.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
TORCH_VERSION ?= 2.13.0
# Extra pip arguments for the torch install, e.g. PyTorch's CPU index URL on
# machines where the default index would serve a CUDA build.
TORCH_PIP_ARGS ?=
comma := ,
EXTRAS ?= embedded,dev
STAMP := $(VENV)/.installed-$(subst $(comma),-,$(EXTRAS))

# No model hub is reachable: every model comes from an installed wheel.
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export HF_DATASETS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false
export DO_NOT_TRACK := 1
# llama-cpp-python builds llama.cpp from source. GGML_NATIVE=OFF builds it for x86-64-v3 (AVX2,
# FMA, F16C; the same flags are ignored on ARM) instead of -march=native: a native build on a CPU
# that lists AMX runs its matrix products on AMX tiles, and a VM that lists AMX without enabling
# it (seen here: a Xeon guest) kills the process with SIGILL ("tilezero") on the first token.
# Set CMAKE_ARGS yourself for another build (e.g. -DGGML_NATIVE=ON on bare metal).
export CMAKE_ARGS ?= -DGGML_NATIVE=OFF

.PHONY: install demo notebooks test test-fast bench lint clean

install: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet "torch==$(TORCH_VERSION)" $(TORCH_PIP_ARGS)
	$(BIN)/python -m pip install --quiet -c constraints.txt -e ".[$(EXTRAS)]"
	@$(BIN)/python -m pip list 2>/dev/null | grep -iE '^(nvidia-|torchvision)' \
	  && { echo "error: CUDA packages or torchvision were installed; see constraints.txt"; exit 1; } || true
	@case "$(EXTRAS)" in *embedded*) $(BIN)/python -c "from rag_graphs.llm.models import load_chat_model; \
	  load_chat_model('embedded', max_tokens=1).invoke('hi')" >/dev/null 2>&1 \
	  || { echo "error: the embedded chat model crashed on its first token: pip reused a llama-cpp-python"; \
	       echo "wheel built for another CPU. Run: $(BIN)/python -m pip cache remove llama_cpp_python && make clean install"; \
	       exit 1; } ;; esac
	touch $@

# About 9 minutes on 2 idle cores after install: ingest, community reports, a RAPTOR tree, every
# method on a four-hop and a two-hop question, GraphRAG's global search.
demo: install
	$(BIN)/rag-graphs demo

# JupyterLab on the notebooks, with this environment's Python as the kernel ("python3").
# JUPYTER_ARGS passes options, e.g. JUPYTER_ARGS="--allow-root --no-browser" in a container.
JUPYTER_ARGS ?=
notebooks: install
	test -x $(BIN)/jupyter-lab || $(BIN)/python -m pip install --quiet -c constraints.txt -e ".[notebooks]"
	$(BIN)/python -m jupyter lab $(JUPYTER_ARGS) notebooks

# One pytest worker per usable CPU (tests/conftest.py), each with its share of llama.cpp
# threads: the fake-model unit tests run beside the model-bound ones instead of after them.
# loadgroup: a file marked xdist_group (a slow server or store set up once per file) runs on
# one worker; every other test goes to whichever worker is free.
PYTEST_ARGS ?= -n auto --dist loadgroup --durations=15
test: install
	$(BIN)/python -m pytest $(PYTEST_ARGS)

test-fast: install
	$(BIN)/python -m pytest -m "not embedded and not server"

# Foundation numbers (~5 min), the router's classifications (~2 min), then every method on
# the first 30 HotpotQA and the first 10 MuSiQue dev questions (RAPTOR aside), and naive vs
# RAPTOR on the first 30 2WikiMultihopQA questions: about 4.5 h on 2 cores the first time
# (~15 s per question and method with the embedded models; indexing the corpora ~15 min,
# 2Wiki's RAPTOR tree ~45 min), then DRAG/IterDRAG's (k, m, n) sweep on the first 10 HotpotQA
# questions (~40 min, bench/drag_sweep.py). Resumable: an interrupted run continues from its stored rows,
# and a finished one only re-renders. BENCH_LIMIT=5 for a quick pass.
BENCH_LIMIT ?= 30
bench: install
	$(BIN)/python bench/foundation.py
	$(BIN)/python bench/router.py
	$(BIN)/python bench/methods.py --dataset hotpotqa --limit $(BENCH_LIMIT)
	$(BIN)/python bench/methods.py --dataset musique --limit $(shell expr $(BENCH_LIMIT) / 3)
	$(BIN)/python bench/methods.py --dataset 2wikimultihopqa --limit $(BENCH_LIMIT) naive raptor
	$(BIN)/python bench/drag_sweep.py --dataset hotpotqa --limit $(shell expr $(BENCH_LIMIT) / 3)

# Style, then types. mypy maps module names to folders, and `ingestion/` and `prompts/` install as
# `rag_graphs.ingestion` and `rag_graphs.prompts` (pyproject's package-dir): it checks a tree of
# links laid out as the wheel is (build/typecheck, made anew each time; the repository holds no link).
# About 1 min from a cold cache, seconds after that.
TYPECHECK := build/typecheck
lint: install
	$(BIN)/ruff check rag_graphs ingestion prompts tests bench
	$(BIN)/ruff format --check rag_graphs ingestion prompts tests bench
	rm -rf $(TYPECHECK) && mkdir -p $(TYPECHECK)
	cp -rs $(CURDIR)/rag_graphs $(TYPECHECK)/rag_graphs
	cp -rs $(CURDIR)/ingestion $(TYPECHECK)/rag_graphs/ingestion
	cp -rs $(CURDIR)/prompts $(TYPECHECK)/rag_graphs/prompts
	cd $(TYPECHECK) && $(CURDIR)/$(BIN)/mypy --config-file $(CURDIR)/pyproject.toml \
	  --cache-dir $(CURDIR)/.mypy_cache -p rag_graphs

clean:
	rm -rf $(VENV) .rag-graphs .pytest_cache .mypy_cache .ruff_cache build
