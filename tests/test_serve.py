"""``prmkit serve`` and the ``openai`` backend: the official ``openai`` client against a real loopback server.

The generator is a tiny causal LM saved to a folder (random weights), the scorer a tiny PRM trained a
few steps; the faults (refused connections, 500s, malformed and truncated replies) come from small
real servers on loopback.
"""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import httpx
import numpy as np
import openai
import pytest
from fastapi import FastAPI
from fastapi.responses import JSONResponse, Response

from prmkit.generate import GenerateConfig, GenerationError, generate_file
from prmkit.generate.remote import OpenAIBackend
from prmkit.generate.run import part_path
from prmkit.io import read_solutions, write_records
from prmkit.schema import Problem
from prmkit.serve import background, free_port
from prmkit.serve.app import ServeConfig, Service
from prmkit.testing.toydata import make_solutions

PROBLEMS = [Problem(f"{a} + {b} =", answer=str(a + b), id=f"p{a}") for a, b in [(1, 2), (13, 4), (7, 7)]]


@pytest.fixture(scope="module")
def prm_dir(tiny_prm):
    return tiny_prm


@pytest.fixture(scope="module")
def service(tiny_lm, prm_dir):
    svc = Service(ServeConfig(generator=str(tiny_lm), scorer=str(prm_dir), name="tiny", max_batch=64))
    yield svc
    svc.close()


@pytest.fixture(scope="module")
def url(service):
    with background(service) as u:
        yield u


def client(url, **kw):
    return openai.OpenAI(base_url=url, api_key="none", **kw)


def test_completions_through_the_official_client(url):
    c = client(url)
    assert [m.id for m in c.models.list().data] == ["tiny"]
    r = c.completions.create(model="tiny", prompt="1 + 2 =\n", n=3, max_tokens=6, seed=7)
    assert len(r.choices) == 3 and len({ch.text for ch in r.choices}) == 3
    assert r.usage.completion_tokens <= 18 and r.usage.prompt_tokens > 0
    again = c.completions.create(model="tiny", prompt="1 + 2 =\n", n=3, max_tokens=6, seed=7)
    assert [ch.text for ch in again.choices] == [ch.text for ch in r.choices]
    chat = c.chat.completions.create(model="tiny", messages=[{"role": "user", "content": "1 + 2 ="}], n=2,
                                     max_tokens=4, seed=7)
    assert len(chat.choices) == 2 and isinstance(chat.choices[0].message.content, str)
    with pytest.raises(openai.BadRequestError, match="above this server's limit"):
        c.completions.create(model="tiny", prompt="x", max_tokens=10**6)


def test_no_request_lost_or_duplicated_under_32_concurrent_clients(url, service):
    c = client(url)

    def ask(seed):
        r = c.completions.create(model="tiny", prompt=f"{seed % 7} + 1 =\n", n=2, max_tokens=8, seed=seed)
        return [ch.text for ch in r.choices]

    calls = service.gen_batcher.calls
    with ThreadPoolExecutor(32) as pool:
        together = list(pool.map(ask, range(32)))
    batched_calls = service.gen_batcher.calls - calls
    alone = [ask(seed) for seed in range(32)]
    assert together == alone  # every client got its own samples, whatever else was in the batch
    assert len({t for pair in together for t in pair}) == 64
    assert batched_calls < 32  # concurrent requests shared model calls


def test_score_endpoint_equals_the_in_process_scorer(url, prm_dir):
    from prmkit.schema import Solution
    from prmkit.score import Scorer

    sols = make_solutions(6, seed=3)
    body = {"solutions": [{"problem": s.problem.problem, "steps": s.texts} for s in sols]}
    got = httpx.post(url + "/score", json=body, timeout=30).json()
    scorer = Scorer(prm_dir, device="cpu")
    for s, served in zip(sols, got["solutions"]):
        ref = Solution.from_steps(s.problem.problem, s.texts)
        scorer.annotate(ref, scorer.probabilities([s.problem.problem], [s.texts])[0])
        assert served["scores"].keys() == ref.scores.keys() and "prm_min" in served["scores"]
        np.testing.assert_allclose([v for v in served["scores"].values()], list(ref.scores.values()), atol=1e-5)
        np.testing.assert_allclose([d["p_correct"] for d in served["steps"]], [st.scores["p_correct"] for st in ref.steps],
                                   atol=1e-5)
    bad = httpx.post(url + "/score", json={"problem": "x"}, timeout=30)
    assert bad.status_code == 422 and "steps" in bad.text


def test_openai_backend_against_prmkit_serve_resumes(url, tmp_path):
    src, out = tmp_path / "problems.jsonl", tmp_path / "out.jsonl"
    write_records(src, PROBLEMS)
    cfg = GenerateConfig(backend="openai", model="tiny", base_url=url, n=4, max_new_tokens=8, progress=False)
    summary = generate_file(src, out, cfg)
    sols = list(read_solutions(out))
    assert summary["written"] == 12 and [s.id for s in sols[:2]] == ["p1/0-0", "p1/0-1"]
    assert sols[0].generator.name == "tiny" and sols[0].generator.sampling["backend"] == "openai"
    first = [s.texts for s in sols]
    out.unlink()
    generate_file(src, out, cfg)
    assert [s.texts for s in read_solutions(out)] == first  # the seed decides the samples


def fault_app(mode: str, fail_after: int = 0) -> FastAPI:
    """A server that answers ``fail_after`` completions well (n copies of "x = 1"), then fails as ``mode``."""
    app = FastAPI()
    app.state.calls = 0

    @app.post("/v1/completions")
    async def completions(body: dict):
        app.state.calls += 1
        good = {"id": "c", "object": "text_completion", "created": 0, "model": "m",
                "choices": [{"index": i, "text": "x = 1\n# Answer\n\n1", "finish_reason": "stop", "logprobs": None}
                            for i in range(body["n"])]}
        if app.state.calls <= fail_after:
            return good
        if mode == "500":
            return JSONResponse({"error": {"message": "model exploded"}}, status_code=500)
        if mode == "few-choices":
            return {**good, "choices": good["choices"][:1]}
        if mode == "not-json":
            return Response("<html>gateway</html>", media_type="application/json")
        return Response(json.dumps(good)[:40], media_type="application/json")  # truncated

    return app


@pytest.mark.parametrize("mode, message", [
    ("500", r"HTTP 500 after 1 retries: .*model exploded"),
    ("few-choices", "malformed response: expected 2 choices, got 1"),
    ("not-json", r"malformed response \(JSONDecodeError: Expecting value: line 1 column 1"),
    ("truncated", r"malformed response \(JSONDecodeError: .*char 40\)"),
])
def test_faults_name_what_failed(mode, message):
    with background(fault_app(mode)) as u:
        cfg = GenerateConfig(backend="openai", model="m", base_url=u, n=2, retries=1)
        with pytest.raises(GenerationError, match=message) as e:
            OpenAIBackend(cfg).complete(PROBLEMS[0], [], 2)
    assert f"{u}/completions, problem p1" in str(e.value)


def test_an_unreachable_server_is_named():
    u = f"http://127.0.0.1:{free_port()}/v1"
    cfg = GenerateConfig(backend="openai", model="m", base_url=u, retries=1, timeout=5)
    with pytest.raises(GenerationError, match=r"connection failed after 1 retries"):
        OpenAIBackend(cfg).complete(PROBLEMS[0], [], 1)


def test_a_server_dying_mid_run_loses_nothing(tmp_path):
    src, out = tmp_path / "problems.jsonl", tmp_path / "out.jsonl"
    write_records(src, PROBLEMS)
    with background(fault_app("500", fail_after=2)) as u:
        cfg = GenerateConfig(backend="openai", model="m", base_url=u, n=2, retries=0, concurrency=1,
                             flush_every=1, progress=False)
        with pytest.raises(GenerationError, match="HTTP 500"):
            generate_file(src, out, cfg, log=lambda _: None)
    assert len(part_path(out).read_text().splitlines()) == 4
    with background(fault_app("500", fail_after=99)) as u:
        summary = generate_file(src, out, GenerateConfig(**{**cfg.__dict__, "base_url": u}))
    assert summary["written"] == 2
    assert [s.id for s in read_solutions(out)] == [f"{p.id}/0-{j}" for p in PROBLEMS for j in range(2)]


def test_the_serve_command_listens_on_loopback(tiny_lm):
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "prmkit", "serve", "--generator", str(tiny_lm), "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        line = proc.stdout.readline()
        while "prmkit serve:" not in line and proc.poll() is None:
            line = proc.stdout.readline()
        assert f"http://127.0.0.1:{port}/v1" in line
        for _ in range(100):
            try:
                health = httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).json()
                break
            except httpx.TransportError:
                import time

                time.sleep(0.1)
        assert health == {"status": "ok", "generator": True, "scorer": False, "critic": False}
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_a_cancelled_request_does_not_stop_the_batcher():
    import threading
    from concurrent.futures import CancelledError

    from prmkit.serve.batcher import Batcher

    gate = threading.Event()
    b = Batcher(lambda xs: (gate.wait(5), [x + 1 for x in xs])[1], max_batch=1)
    first = b.submit(1)  # the worker is busy with it
    waiting = b.submit(2)
    assert waiting.cancel()  # its client went away while it queued
    gate.set()
    assert first.result(timeout=5) == 2 and b.submit(3).result(timeout=5) == 4
    with pytest.raises(CancelledError):
        waiting.result()
    b.close()
    with pytest.raises(RuntimeError, match="closed"):
        b.submit(4)


def test_chat_on_a_server_without_a_generator_is_a_404(prm_dir):
    svc = Service(ServeConfig(scorer=str(prm_dir)))
    with background(svc) as u, pytest.raises(openai.NotFoundError, match="no generator"):
        client(u).chat.completions.create(model="x", messages=[{"role": "user", "content": "hi"}])
    svc.close()


def test_stop_strings_end_generation_and_are_cut(url):
    c = client(url)
    free = c.completions.create(model="tiny", prompt="1 + 2 =\n", n=4, max_tokens=24, seed=3)
    stop = next(ch.text[5:7] for ch in free.choices if len(ch.text) > 8)  # two characters from a sample's middle
    cut = c.completions.create(model="tiny", prompt="1 + 2 =\n", n=4, max_tokens=24, seed=3, stop=[stop])
    for a, b in zip(free.choices, cut.choices):
        if stop in a.text:
            assert b.text == a.text[: a.text.index(stop)] and b.finish_reason == "stop"
        else:
            assert b.text == a.text
    assert cut.usage.completion_tokens < free.usage.completion_tokens  # generation stopped there


def help_curl_line() -> str:
    """The curl example of ``prmkit serve --help``, as printed."""
    out = subprocess.run([sys.executable, "-m", "prmkit", "serve", "--help"], capture_output=True, text=True,
                         check=True).stdout
    return next(line.strip() for line in out.splitlines() if line.strip().startswith("curl "))


def test_the_help_curl_example_works_as_printed(url):
    import os
    import shlex
    import shutil
    from urllib.parse import urlparse

    if shutil.which("curl") is None:
        pytest.skip("curl is not installed")
    line = help_curl_line()
    assert ":8100/" in line  # the example's port, swapped for the test server's below
    args = shlex.split(line.replace(":8100/", f":{urlparse(url).port}/"))
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}  # loopback, never through a proxy
    done = subprocess.run(args, check=False, capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)  # curl -d sends a form's Content-Type: the body is read as JSON all the same
    assert got["model"] == "tiny" and got["kind"] == "prm" and len(got["solutions"]) == 1
    assert [set(s) >= {"p_correct"} for s in got["solutions"][0]["steps"]] == [True, True]


def test_a_json_body_without_a_content_type_is_read_as_json(url):
    body = {"model": "tiny", "prompt": "1 + 2 =\n", "n": 2, "max_tokens": 6, "seed": 5}
    bare = httpx.post(url + "/completions", content=json.dumps(body).encode(), timeout=30)
    assert "content-type" not in bare.request.headers and bare.status_code == 200, bare.text
    typed = httpx.post(url + "/completions", json=body, timeout=30).json()
    assert [c["text"] for c in bare.json()["choices"]] == [c["text"] for c in typed["choices"]]


@pytest.mark.parametrize("content, message", [
    (b"prompt=1+2", r"the request body is not JSON \(JSONDecodeError: Expecting value: line 1 column 1"),
    (b'{"prompt": "1 + 2 =",', r"the request body is not JSON \(JSONDecodeError: Expecting property name"),
    (b"", "the request body is empty: send a JSON object"),
    (b'["1 + 2 ="]', "the request body must be a JSON object, got a JSON array"),
    (b"null", "the request body must be a JSON object, got a JSON null"),
])
def test_a_body_that_is_not_a_json_object_is_a_400_naming_why(url, content, message):
    import re

    r = httpx.post(url + "/completions", content=content, headers={"content-type": "application/x-www-form-urlencoded"},
                   timeout=30)
    error = r.json()["error"]
    assert r.status_code == 400 and error["type"] == "invalid_request_error" and error["code"] == 400
    assert re.match(message, error["message"]), error["message"]


def joined(stream, text) -> tuple[dict[int, str], dict[int, str], list]:
    """Per choice index, the streamed text joined and the finish reason; and the chunks."""
    texts, reasons, seen = {}, {}, []
    for chunk in stream:
        seen.append(chunk)
        for ch in chunk.choices:
            texts[ch.index] = texts.get(ch.index, "") + (text(ch) or "")
            if ch.finish_reason is not None:
                reasons[ch.index] = ch.finish_reason
    return texts, reasons, seen


def test_streamed_completions_join_to_the_unstreamed_text(url):
    c = client(url)
    ask = {"model": "tiny", "prompt": "1 + 2 =\n", "n": 3, "max_tokens": 8, "seed": 11}
    plain = c.completions.create(**ask)
    texts, reasons, seen = joined(c.completions.create(**ask, stream=True), lambda ch: ch.text)
    assert texts == {ch.index: ch.text for ch in plain.choices} and len(set(texts.values())) == 3
    assert reasons == {ch.index: ch.finish_reason for ch in plain.choices}
    assert {x.object for x in seen} == {"text_completion"} and len({x.id for x in seen}) == 1
    with_usage = list(c.completions.create(**ask, stream=True, stream_options={"include_usage": True}))
    assert with_usage[-1].choices == [] and with_usage[-1].usage.completion_tokens == plain.usage.completion_tokens


def test_streamed_chat_joins_to_the_unstreamed_message(url):
    c = client(url)
    ask = {"model": "tiny", "messages": [{"role": "user", "content": "1 + 2 ="}], "n": 2, "max_tokens": 8, "seed": 11}
    plain = c.chat.completions.create(**ask)
    texts, reasons, seen = joined(c.chat.completions.create(**ask, stream=True), lambda ch: ch.delta.content)
    assert texts == {ch.index: ch.message.content for ch in plain.choices}
    assert reasons == {ch.index: ch.finish_reason for ch in plain.choices}
    assert {x.object for x in seen} == {"chat.completion.chunk"}
    firsts = {}
    for x in seen:
        for ch in x.choices:
            firsts.setdefault(ch.index, ch.delta)
    assert {d.role for d in firsts.values()} == {"assistant"}  # the role comes first, then the content


def test_the_stream_on_the_wire_is_openais(url):
    body = {"model": "tiny", "prompt": "1 + 2 =\n", "max_tokens": 4, "seed": 1, "stream": True}
    with httpx.stream("POST", url + "/completions", json=body, timeout=30) as r:
        assert r.headers["content-type"].startswith("text/event-stream")
        raw = r.read().decode()
    events = raw.split("\n\n")
    assert events[-2:] == ["data: [DONE]", ""] and all(e.startswith("data: {") for e in events[:-2])
    last = json.loads(events[-3].removeprefix("data: "))
    assert last["choices"][0]["text"] == "" and last["choices"][0]["finish_reason"] in ("stop", "length")


def test_a_streamed_critique_joins_to_the_unstreamed_one(prm_dir):
    from prmkit.label.auto.judge import critique_prompt

    svc = Service(ServeConfig(critic=str(prm_dir), name="critic", device="cpu"))
    prompt = critique_prompt("1+1?", ["1+1 = 2", "# Answer\n\n2"])
    ask = {"model": "critic", "messages": [{"role": "user", "content": prompt}]}
    try:
        with background(svc) as u:
            c = client(u)
            plain = c.chat.completions.create(**ask)
            texts, _, _ = joined(c.chat.completions.create(**ask, stream=True), lambda ch: ch.delta.content)
    finally:
        svc.close()
    assert texts == {0: plain.choices[0].message.content} and "\\boxed{" in texts[0]


@pytest.mark.parametrize("stream", [False, True])
def test_an_unknown_model_is_a_404_naming_it(url, stream):
    c = client(url)
    with pytest.raises(openai.NotFoundError, match="The model `nope` does not exist.") as e:
        c.completions.create(model="nope", prompt="1 + 2 =\n", max_tokens=4, stream=stream)
    assert e.value.response.json() == {"error": {"message": "The model `nope` does not exist.", "type": "NotFoundError",
                                                 "param": "model", "code": 404}}
    with pytest.raises(openai.NotFoundError, match="`tinyy`"):
        c.chat.completions.create(model="tinyy", messages=[{"role": "user", "content": "hi"}], stream=stream)


def test_a_request_without_a_model_gets_the_served_one(url):
    r = httpx.post(url + "/completions", json={"prompt": "1 + 2 =\n", "max_tokens": 4, "seed": 1}, timeout=30)
    assert r.status_code == 200 and r.json()["model"] == "tiny"
