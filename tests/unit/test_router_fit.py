"""The fitted router (``rag_graphs.eval.router_fit``, ``rag_graphs.text.routing``): the cheapest
method within the margin per segment, cross-validated against always-best and always-cheapest,
refused on too few questions, and a file ``auto`` can read back."""

from __future__ import annotations

import json

import pytest

from rag_graphs.eval.router_fit import MIN_QUESTIONS, Overhead, choose, fit_router, fit_table, write_router
from rag_graphs.text.routing import Features, load_router


def _row(method: str, qid: str, em: float, calls: float) -> dict:
    return {
        "method": method,
        "id": qid,
        "em": em,
        "f1": em,
        "recall_at_5": em,
        "llm_calls": calls,
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "retrievals": 1 + (calls > 1),  # ircot searches twice
        "seconds": calls + 0.1,
    }


def _set(n: int = 80) -> tuple[list[dict], dict[str, Features]]:
    """Single-hop questions: naive (1 call) one question behind ircot (4 calls), 2.5 points at 40;
    multi-hop ones: only ircot answers (naive gets 1 in 8)."""
    rows, features = [], {}
    for i in range(n):
        qid, multi = f"q{i}", i % 2 == 1
        features[qid] = Features(
            kind="multi_hop" if multi else "single_hop", words=8 + 6 * multi, entities=1 + multi
        )
        naive = float(i % 8 == 1) if multi else float(i % 4 != 0 and i != 2)
        ircot = float(i % 4 != 3) if multi else float(i % 4 != 0)
        rows += [_row("naive", qid, naive, 1), _row("ircot", qid, ircot, 4)]
    return rows, features


def test_choose_takes_the_cheapest_method_within_the_margin_unless_the_paired_test_says_worse():
    rows, _ = _set()
    table = {m: {r["id"]: r for r in rows if r["method"] == m} for m in ("naive", "ircot")}
    single = [f"q{i}" for i in range(0, 80, 2)]
    multi = [f"q{i}" for i in range(1, 80, 2)]
    method, why = choose(table, single, "em", "llm_calls", 0.05)
    assert method == "naive" and why.startswith("cheapest within 5.0 EM points of the best, ircot, on 40")
    assert choose(table, single, "em", "llm_calls", 0.02)[0] == "ircot"  # 2.5 points is outside 2
    assert choose(table, multi, "em", "llm_calls", 0.02)[0] == "ircot"
    # a margin wide enough to cover the gap still does not pick naive: the paired test says ircot is better
    assert choose(table, multi, "em", "llm_calls", 0.9)[0] == "ircot"


def test_choose_keeps_the_best_when_the_paired_verdict_is_unclear():
    """The best wins 4 of 56 questions and loses none: the interval excludes 0, the exact p is
    0.125. Within a 10-point margin, the cheaper method is not "close" on such evidence."""
    rows = []
    for i in range(56):
        rows += [_row("ircot", f"q{i}", float(i < 4), 4), _row("naive", f"q{i}", 0.0, 1)]
    table = {m: {r["id"]: r for r in rows if r["method"] == m} for m in ("naive", "ircot")}
    assert choose(table, [f"q{i}" for i in range(56)], "em", "llm_calls", 0.1)[0] == "ircot"


def test_the_fit_splits_on_the_kind_and_beats_always_best_on_cost_within_the_margin(tmp_path):
    rows, features = _set()
    fit = fit_router(rows, features, metric="em", cost="llm_calls", margin=0.05)
    raw = fit.router
    assert raw["feature"] == "kind" and raw["always_best"] == "ircot" and raw["always_cheapest"] == "naive"
    assert {s["equals"]: s["method"] for s in raw["segments"]} == {
        "multi_hop": "ircot",
        "single_hop": "naive",
    }
    cv, chosen = fit.cross_validation, raw["chosen_by_cross_validation"]
    assert cv[chosen].quality >= cv["always-best"].quality - 0.05
    assert cv[chosen].cost < cv["always-best"].cost and cv[chosen].quality > cv["always-cheapest"].quality
    router = load_router(write_router(fit, tmp_path / "router.json"))
    assert router.choose(Features("multi_hop", 14, 2))[0] == "ircot"
    method, why = router.choose(Features("single_hop", 8, 1))
    assert method == "naive" and why.startswith("kind = single_hop: cheapest within")
    assert "| kind = multi_hop | ircot |" in fit_table(fit)


def test_a_held_out_half_is_scored_against_always_best():
    rows, features = _set(160)
    tune = [f"q{i}" for i in range(80)]
    check = [f"q{i}" for i in range(80, 160)]
    fit = fit_router(rows, features, metric="em", margin=0.05, questions=tune, held_out=check)
    assert fit.router["fitted_on"]["questions"] == 80 and fit.held_out_questions == 80
    held = fit.held_out
    assert held["router"].cost < held["always-best"].cost
    assert held["router"].quality >= held["always-best"].quality - 0.05
    assert fit.held_out_verdict == "no difference detected at n=80"
    assert "(held out)" in fit_table(fit)


def test_searches_are_a_cost_a_router_is_fitted_against():
    rows, features = _set(160)
    fit = fit_router(
        rows,
        features,
        metric="em",
        cost="retrievals",
        margin=0.05,
        questions=[f"q{i}" for i in range(80)],
        held_out=[f"q{i}" for i in range(80, 160)],
    )
    assert {s["equals"]: s["method"] for s in fit.router["segments"]} == {
        "multi_hop": "ircot",
        "single_hop": "naive",
    }
    assert fit.held_out["router"].cost == pytest.approx(1.5) and fit.held_out["always-best"].cost == 2.0


def test_a_split_that_saves_less_than_routing_costs_is_not_chosen():
    """Routing computes features before any method runs; a split whose saving is smaller loses
    to running the best method alone (on 2Wiki, a split saving 0.02 s cost auto 0.66 s)."""
    rows, features = _set(160)
    halves = {"questions": [f"q{i}" for i in range(80)], "held_out": [f"q{i}" for i in range(80, 160)]}
    cheap = fit_router(rows, features, metric="em", margin=0.05, overhead=Overhead(question=0.5), **halves)
    assert cheap.router["chosen_by_cross_validation"] == "split on kind"
    assert cheap.held_out["router"].cost == pytest.approx(2.5 + 0.5)  # naive 1, ircot 4, half each
    dear = fit_router(rows, features, metric="em", margin=0.05, overhead=Overhead(question=2.0), **halves)
    assert dear.router["chosen_by_cross_validation"] == "one method" and not dear.router["segments"]
    assert dear.cross_validation["split on kind"].cost == pytest.approx(2.5 + 2.0)
    assert dear.held_out["router"].cost == dear.held_out["always-best"].cost == 4.0
    assert "include routing's own per question: 2 for the question's features" in fit_table(dear)


def test_too_few_questions_or_one_method_is_refused_with_a_clear_error():
    rows, features = _set(MIN_QUESTIONS - 2)
    with pytest.raises(ValueError, match=f"too few questions to fit a router: 18 .*at least {MIN_QUESTIONS}"):
        fit_router(rows, features)
    with pytest.raises(ValueError, match="chooses between methods; the run has 1"):
        fit_router([r for r in rows if r["method"] == "naive"], features)
    with pytest.raises(ValueError, match="--metric 'bleu'"):
        fit_router(rows, features, metric="bleu")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"format": "other"}, "format 'other'"),
        ({"default": {"method": "auto"}}, r"default.method: 'auto' is not a method auto can route to"),
        ({"segments": [{"method": "naive", "feature": "colour"}]}, r"segments\[0\].feature: 'colour'"),
        ({"segments": [{"method": "naive", "feature": "kind", "equals": "poem"}]}, r"segments\[0\].equals"),
        ({"margin": "two"}, "'margin' must be a number"),
    ],
)
def test_a_wrong_router_file_names_the_file_and_key(tmp_path, change, message):
    raw = {"format": "rag-graphs-router/1", "margin": 0.02, "segments": [], "default": {"method": "naive"}}
    path = tmp_path / "router.json"
    path.write_text(json.dumps(raw | change))
    with pytest.raises(ValueError, match=message) as caught:
        load_router(path)
    assert str(path) in str(caught.value)


def test_a_missing_router_file_names_the_setting(tmp_path):
    with pytest.raises(FileNotFoundError, match="RagContext.router_file not found"):
        load_router(tmp_path / "none.json")


def test_a_split_on_a_first_search_feature_is_fitted_when_it_separates_the_questions():
    rows, features = _set()
    # every question looks alike but for its first search: multi-hop questions match the corpus worse
    same = {
        q: Features("multi_hop", 10, 1, top_score=0.3 if int(q[1:]) % 2 else 0.7, agreement=0.5)
        for q in features
    }
    fit = fit_router(rows, same, metric="em", margin=0.05)
    assert fit.router["feature"] == "top_score"
    router = load_router_from(fit)
    assert router.needs_retrieval
    assert router.choose(Features("multi_hop", 10, 1, top_score=0.2, agreement=0.5))[0] == "ircot"
    assert router.choose(Features("multi_hop", 10, 1, top_score=0.8, agreement=0.5))[0] == "naive"
    # a question never searched matches no segment on a search feature: the default takes it
    assert router.choose(Features("multi_hop", 10, 1))[0] == router.default.method


def test_without_first_search_features_no_split_on_them_is_tried():
    rows, features = _set()
    fit = fit_router(rows, features, metric="em", margin=0.05)
    assert not any(
        name.startswith(("split on top_score", "split on agreement")) for name in fit.cross_validation
    )


def load_router_from(fit):
    from rag_graphs.text.routing import parse_router

    return parse_router(fit.router, "router.json")


def test_first_retrieval_reads_the_top_score_and_the_agreement_under_the_access_filter(loaded):
    from rag_graphs.text.routing import first_retrieval

    top, agreement = first_retrieval("Velmora Institute founder", loaded, loaded.embeddings, k=3, expr=None)
    assert -1.0 <= top <= 1.0 and top != 0.0 and 0.0 < agreement <= 1.0
    assert first_retrieval(
        "Velmora Institute founder", loaded, loaded.embeddings, k=3, expr='source == "none"'
    ) == (
        0.0,
        0.0,
    )
