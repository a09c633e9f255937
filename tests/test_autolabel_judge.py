r"""The LLM-judge step labeller (:mod:`prmkit.label.auto.judge`) and ``prmkit serve --critic``.

Tiers: the parser on a table of judge replies written in the styles of real critics (QwQ's long
self-checking reviews, GPT-4o's markdown, Qwen2.5-Math's one-liners), including the ways they go wrong;
the prompt's round trip as a property; then the real ``openai`` client through :class:`Judge` against a
real loopback server whose chat endpoint is a tiny PRM answering critique prompts.
"""

from __future__ import annotations

from types import SimpleNamespace

import httpx
import openai
import pytest
from fastapi import FastAPI
from hypothesis import given, settings
from hypothesis import strategies as st

from prmkit.generate import GenerationError
from prmkit.label.auto.judge import (
    CRITIQUE_TEMPLATE,
    Judge,
    Verdict,
    critique_prompt,
    judge_ratings,
    parse_critique,
    read_critique_prompt,
)
from prmkit.schema import Solution
from prmkit.serve import background, free_port
from prmkit.serve.app import ServeConfig, Service, critic_reply
from prmkit.testing.toydata import make_solutions

QWQ_LONG = r"""Okay, let me go through this solution step by step. The problem asks for the total cost of 3 notebooks
at $4 each plus a $5 pen.

Starting with paragraph 0: "3 notebooks cost 3 * 4 = 12 dollars." That's right, 3 times 4 is 12.

Paragraph 1: "Adding the pen, 12 + 5 = 18." Wait, 12 + 5 is 17, not 18. Hmm, let me double-check. 12 plus 5... yes,
17. So paragraph 1 has an arithmetic error.

But wait, maybe I misread paragraph 0? No, paragraph 0 is fine. Paragraph 2 then says the answer is 18, which follows
from the mistake, but the earliest error is in paragraph 1.

**Final Answer**
\[ \boxed{1} \]"""

GPT4O_MARKDOWN = r"""### Paragraph 0
The solution sets up the equation $2x + 3 = 9$ correctly from the problem statement.

### Paragraph 1
Subtracting 3 from both sides gives $2x = 6$. This is correct.

### Paragraph 2
The solution divides by 2 and writes $x = \frac{6}{3} = 2$, which is wrong: $\frac{6}{2} = 3$.

### Paragraph 3
The final answer $x = 2$ inherits the error.

**Final answer:** \boxed{2}"""

EARLIER_BOXES = r"""Let me check the final answer first: the solution concludes with $\boxed{42}$, and the reference
answer is 42, so the final answer matches.

Paragraph 0 computes $6 \times 7 = 42$: correct. (If this were wrong I would answer \boxed{0}.)
Paragraph 1 restates the result: correct.
Paragraph 2 writes the answer in a box: correct.

No paragraph contains an error, so the index is \boxed{-1}."""

QWEN_MATH = r"""The solution is correct up to paragraph 0, but paragraph 1 miscounts the cases.

The index of the paragraph where the earliest error occurs is $\boxed{1}$."""

CUT_OFF = r"""Let me review each paragraph carefully.

Paragraph 0: The problem asks how many apples remain. The solution starts with 17 apples. Correct.

Paragraph 1: Here the solution computes 17 - 9 = 8, which is correct. Then it says that half of the remaining
apples are given away, so 8 / 2 = 4. Let me verify this against the problem statement, which says that"""

CUT_IN_BOX = r"""Paragraph 0 is fine (it would be \boxed{0} if it were not). Paragraph 1 is wrong.

So the answer is \boxed{"""

CASES = [
    ("qwq long review", QWQ_LONG, 3, Verdict(1)),
    ("gpt-4o markdown", GPT4O_MARKDOWN, 4, Verdict(2)),
    ("earlier boxes lose to the last", EARLIER_BOXES, 3, Verdict(-1)),
    ("qwen2.5-math one-liner", QWEN_MATH, 3, Verdict(1)),
    ("double braces, as in the template file", r"Every paragraph checks out. \boxed{{-1}}", 4, Verdict(-1)),
    ("text wrapper", r"All steps are valid.\n\nFinal answer: $\boxed{\text{-1}}$", 4, Verdict(-1)),
    ("paragraph name", r"The first mistake is in <paragraph_3>. \boxed{paragraph_3}", 5, Verdict(3)),
    ("escaped underscore in text", r"\boxed{\text{paragraph\_2}}", 5, Verdict(2)),
    ("trailing period", r"Thus the earliest error: \boxed{3.}", 5, Verdict(3)),
    ("spaces and bold", r"**Answer**: \boxed{ \textbf{ 2 } }", 5, Verdict(2)),
    ("unicode minus", "No error is found. \\boxed{\u22121}", 2, Verdict(-1)),
    ("answer line without a box", "Paragraph 0 is right; paragraph 2 divides by zero.\n\n**Answer:** 2", 3,
     Verdict(2)),
    ("final answer sentence without a box", "Everything checks.\nThe final answer is -1.", 3, Verdict(-1)),
    ("cut off before any box", CUT_OFF, 4, Verdict(None, "no \\boxed{} in the reply")),
    ("cut off inside the last box", CUT_IN_BOX, 3,
     Verdict(None, "the last \\boxed{ is never closed (the reply is cut off)")),
    ("prose only: numbers in prose are not answers", "The earliest error occurs in paragraph 2.", 4,
     Verdict(None, "no \\boxed{} in the reply")),
    ("an answer line that is not the last line", "Answer: 2\nActually, let me reconsider paragraph 1.", 4,
     Verdict(None, "no \\boxed{} in the reply")),
    ("out of range", r"The error is in paragraph 7. \boxed{7}", 5,
     Verdict(None, "\\boxed{7} but the solution has 5 paragraphs")),
    ("index equal to the paragraph count", r"\boxed{3}", 3, Verdict(None, "\\boxed{3} but the solution has 3 paragraphs")),
    ("below -1", r"\boxed{-2}", 3, Verdict(None, "\\boxed{-2} is below -1")),
    ("not an integer", r"It is either paragraph 2 or 3. \boxed{2 or 3}", 5,
     Verdict(None, "\\boxed{2 or 3} is not an integer")),
    ("a letter", r"\boxed{x}", 5, Verdict(None, "\\boxed{x} is not an integer")),
    ("empty box", r"The answer is \boxed{}.", 5, Verdict(None, "\\boxed{} is empty")),
    ("empty reply", "", 3, Verdict(None, "empty reply")),
    ("whitespace reply", " \n\n ", 3, Verdict(None, "empty reply")),
    ("no reply at all", None, 3, Verdict(None, "empty reply")),
]


@pytest.mark.parametrize("text, n_steps, expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_parse_critique(text, n_steps, expected):
    assert parse_critique(text, n_steps) == expected


def test_judge_ratings():
    assert judge_ratings(-1, 4) == [1, 1, 1, 1]
    assert judge_ratings(0, 3) == [-1, None, None]
    assert judge_ratings(2, 3) == [1, 1, -1]
    assert judge_ratings(-1, 0) == []
    for bad in (3, -2):
        with pytest.raises(ValueError, match="not -1 or a step of 3"):
            judge_ratings(bad, 3)


def test_the_prompt_is_processbenchs():
    # ProcessBench's run_eval.py: tagged paragraphs, stripped, then TEMPLATE.format(...)
    steps = ["Let $x = \\frac{1}{2}$.", "So $2x = 1$."]
    tagged = "".join(f"<paragraph_{i}>\n{s}\n</paragraph_{i}>\n\n" for i, s in enumerate(steps)).strip()
    assert critique_prompt("Find $x$ {if any}.", steps) == CRITIQUE_TEMPLATE.format(problem="Find $x$ {if any}.",
                                                                                    tagged_response=tagged)
    assert critique_prompt("p", ["s"]).endswith('(which typically denotes "not found").\n\nPlease put your final '
                                               "answer (i.e., the index) in \\boxed{}.")
    with pytest.raises(ValueError, match="at least one paragraph"):
        critique_prompt("p", [])


UNTAGGED = st.text(alphabet=st.sampled_from(list("ab \n\t<>/_[]{}$\\paragrh0123.")) | st.characters(),
                   max_size=40).filter(lambda s: "<paragraph_" not in s and "</paragraph_" not in s)


@settings(max_examples=200, deadline=None)
@given(UNTAGGED, st.lists(UNTAGGED, min_size=1, max_size=6))
def test_read_critique_prompt_inverts_critique_prompt(problem, steps):
    assert read_critique_prompt(critique_prompt(problem, steps)) == (problem, steps)


def test_read_critique_prompt_refuses_other_text():
    good = critique_prompt("2+2?", ["2+2 = 4", "# Answer\n\n4"])
    for bad in ["What is 2+2?", good + "\nThanks!", "Hi. " + good, good.replace("<paragraph_1>", "<paragraph_2>"),
                good.replace("\n</paragraph_0>", ""), good.replace("</paragraph_0>\n\n<paragraph_1>",
                                                                   "</paragraph_0>\n<paragraph_1>"), ""]:
        assert read_critique_prompt(bad) is None, bad


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(0, 1), min_size=1, max_size=8), st.floats(0, 1))
def test_the_judge_reads_back_what_the_critic_replies(p, threshold):
    expected = next((i for i, x in enumerate(p) if x < threshold), -1)
    assert parse_critique(critic_reply(p, threshold), len(p)) == Verdict(expected)


def test_a_critic_that_lost_paragraphs_to_truncation_gives_no_verdict():
    assert parse_critique(critic_reply([0.9, None, None], 0.5), 3).index is None
    assert parse_critique(critic_reply([0.9, 0.1, None], 0.5), 3) == Verdict(1)  # the error came first


# --- end to end: Judge -> openai client -> prmkit serve --critic -> a tiny PRM ------------------------------

@pytest.fixture(scope="module")
def prm_dir(tiny_prm):
    return tiny_prm


@pytest.fixture(scope="module")
def prm(prm_dir):
    from prmkit.score import Scorer

    return Scorer(prm_dir, device="cpu")


@pytest.fixture(scope="module")
def solutions():
    return make_solutions(10, seed=5)


def critic_server(prm_dir, prm, threshold: float):
    """A server with the PRM on /v1/score and, the same model and batcher, as the critic."""
    cfg = ServeConfig(critic=str(prm_dir), scorer=str(prm_dir), critic_threshold=threshold, name="critic")
    return Service(cfg, scorer=prm, critic=prm)


def served_p_correct(url: str, sols: list[Solution]) -> list[list[float]]:
    body = {"solutions": [{"problem": s.problem.problem, "steps": s.texts} for s in sols]}
    got = httpx.post(url + "/score", json=body, timeout=60).json()["solutions"]
    return [[step["p_correct"] for step in g["steps"]] for g in got]


def test_judge_verdicts_follow_the_critics_scores(prm_dir, prm, solutions):
    svc = critic_server(prm_dir, prm, 0.5)
    with background(svc) as url:
        scores = served_p_correct(url, solutions)
        flat = sorted(x for ps in scores for x in ps)
        threshold = (flat[len(flat) // 2 - 1] + flat[len(flat) // 2]) / 2  # some steps above, some below
    svc.close()
    assert flat[0] < threshold < flat[-1]
    for t, expect in [(threshold, None), (0.0, -1), (1.0, 0)]:  # the threshold decides
        svc = critic_server(prm_dir, prm, t)
        with background(svc) as url, Judge("critic", url, max_new_tokens=512, concurrency=4) as judge:
            results = judge.judge(solutions)
        svc.close()
        for sol, ps, r in zip(solutions, scores, results):
            first = next((i for i, x in enumerate(ps) if x < t), -1) if expect is None else expect
            assert r.verdict == Verdict(first), (t, ps, r.reply)
            assert r.reply.endswith(f"\\boxed{{{first}}}") and r.reply.count("p_correct = ") == len(sol.texts)
            assert r.prompt_chars == len(critique_prompt(sol.problem.problem, sol.texts))
            assert r.completion_tokens == len(prm.tokenizer.encode(r.reply, add_special_tokens=False))
    assert len({r.verdict.index for r in results}) == 1  # at t=1 every solution's paragraph 0 is below


def test_critic_reply_shape_through_the_official_client(prm_dir, prm, solutions):
    sol = solutions[0]
    prompt = critique_prompt(sol.problem.problem, sol.texts)
    svc = critic_server(prm_dir, prm, 0.5)
    with background(svc) as url:
        assert httpx.get(url.removesuffix("/v1") + "/health").json()["critic"] is True
        c = openai.OpenAI(base_url=url, api_key="none")
        r = c.chat.completions.create(model="critic", messages=[{"role": "system", "content": "Be strict."},
                                                                {"role": "user", "content": prompt}], n=3)
        cut = c.chat.completions.create(model="critic", messages=[{"role": "user", "content": prompt}],
                                        max_tokens=3)
        with pytest.raises(openai.BadRequestError, match="must be a ProcessBench critique prompt"):
            c.chat.completions.create(model="critic", messages=[{"role": "user", "content": "What is 2+2?"}])
        with pytest.raises(openai.BadRequestError, match="critique prompt"):  # the last user turn is the one read
            c.chat.completions.create(model="critic", messages=[{"role": "user", "content": prompt},
                                                                {"role": "assistant", "content": "\\boxed{0}"},
                                                                {"role": "user", "content": "Are you sure?"}])
        with Judge("critic", url, max_new_tokens=3) as judge:
            short = judge.judge([sol])[0]
    svc.close()
    texts = [ch.message.content for ch in r.choices]
    assert len(texts) == 3 and len(set(texts)) == 1 and {ch.finish_reason for ch in r.choices} == {"stop"}
    lines = texts[0].splitlines()
    assert [ln.split(":")[0] for ln in lines[:len(sol.texts)]] == [f"Paragraph {i}" for i in range(len(sol.texts))]
    assert lines[-1].startswith("\\boxed{") and parse_critique(texts[0], len(sol.texts)).index is not None
    reply_tokens = len(prm.tokenizer.encode(texts[0], add_special_tokens=False))
    assert r.usage.completion_tokens == 3 * reply_tokens
    assert r.usage.prompt_tokens == len(prm.tokenizer.encode(prompt))
    assert cut.choices[0].finish_reason == "length" and cut.usage.completion_tokens == 3
    assert short.verdict == Verdict(None, "no \\boxed{} in the reply; the reply hit max_new_tokens")
    assert short.completion_tokens == 3


def test_the_judge_sends_exactly_the_critique_prompt(solutions):
    app, seen = FastAPI(), []

    @app.post("/v1/chat/completions")
    async def chat(body: dict):
        seen.append(body)
        return {"id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                "choices": [{"index": 0, "message": {"role": "assistant", "content": "Fine. \\boxed{-1}"},
                             "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 4, "total_tokens": 5}}

    with background(app) as url, Judge("judge-model", url, max_new_tokens=64) as judge:
        results = judge.judge(solutions[:3])
    assert [r.verdict for r in results] == [Verdict(-1)] * 3 and results[0].completion_tokens == 4
    by_prompt = {b["messages"][0]["content"]: b for b in seen}
    for sol in solutions[:3]:
        body = by_prompt[critique_prompt(sol.problem.problem, sol.texts)]
        assert body["messages"] == [{"role": "user", "content": critique_prompt(sol.problem.problem, sol.texts)}]
        assert body["temperature"] == 0 and body["max_tokens"] == 64 and body["n"] == 1 and body["model"] == "judge-model"


def test_a_judge_request_that_fails_for_good_raises(solutions):
    url = f"http://127.0.0.1:{free_port()}/v1"
    with Judge("judge", url, retries=0, timeout=5) as judge, pytest.raises(GenerationError, match="connection failed"):
        judge.judge(solutions[:2])


def test_critic_settings_are_checked(prm_dir):
    with pytest.raises(ValueError, match="critic_threshold must be in"):
        ServeConfig(critic=str(prm_dir), critic_threshold=1.5)
    with pytest.raises(ValueError, match="--critic folder"):
        Service(ServeConfig())
    orm = SimpleNamespace(card=SimpleNamespace(kind="orm"))
    with pytest.raises(ValueError, match="--critic needs a PRM"):
        Service(ServeConfig(critic="orm"), critic=orm)
    svc = Service(ServeConfig(scorer=str(prm_dir), critic=str(prm_dir)))  # one folder: one model, one batcher
    assert svc.critic is svc.scorer and svc.critic_batcher is svc.score_batcher and svc.name == prm_dir.name
    svc.close()
