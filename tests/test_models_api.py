"""`api:` models against a local OpenAI-compatible server started by each test (127.0.0.1, random port)."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from parallelbench.models import ModelSpecError, load_model
from parallelbench.models.api import APIError


class Server:
    """Replies from a script: each request takes the next action (the last one repeats)."""

    def __init__(self, actions):
        self.actions = list(actions)
        self.requests: list[dict] = []
        self.active = 0
        self.max_active = 0
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with outer.lock:
                    outer.requests.append({"body": body, "auth": self.headers.get("Authorization")})
                    action = outer.actions.pop(0) if len(outer.actions) > 1 else outer.actions[0]
                action(self, body)

            def busy(self, seconds):
                """Count this request as in progress while it 'computes' (before it answers)."""
                with outer.lock:
                    outer.active += 1
                    outer.max_active = max(outer.max_active, outer.active)
                time.sleep(seconds)
                with outer.lock:
                    outer.active -= 1

        class Quiet(ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request, client_address):  # a client that gave up (timeout tests)
                pass

        self.httpd = Quiet(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def reply(text="Susan Fox", tokens=3, delay=0.0):
    def act(h, body):
        h.busy(delay)
        data = json.dumps({"choices": [{"message": {"role": "assistant", "content": text}}],
                           "usage": {"completion_tokens": tokens}}).encode()
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)
    return act


def status(code, retry_after=None):
    def act(h, body):
        h.send_response(code)
        if retry_after is not None:
            h.send_header("Retry-After", str(retry_after))
        h.send_header("Content-Length", "2")
        h.end_headers()
        h.wfile.write(b"{}")
    return act


def stream(snapshots, tokens):
    """Mercury-style diffusing stream: each chunk holds the whole current text."""
    def act(h, body):
        h.send_response(200)
        h.send_header("Content-Type", "text/event-stream")
        h.end_headers()
        for text in snapshots:
            chunk = {"choices": [{"delta": {"content": text}}]}
            h.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
        h.wfile.write(f"data: {json.dumps({'choices': [], 'usage': {'completion_tokens': tokens}})}\n\n".encode())
        h.wfile.write(b"data: [DONE]\n\n")
    return act


@pytest.fixture
def serve():
    servers = []

    def start(*actions):
        s = Server(actions)
        servers.append(s)
        return s
    yield start
    for s in servers:
        s.close()


MSGS = [{"role": "user", "content": "Copy: Susan Fox"}]


class _Sample:
    def __init__(self, i):
        self.id, self.messages = str(i), MSGS


def make(server, **opts):
    opts = {"base_url": server.url, "api_key": "k-test", "backoff": 0.01, "max_backoff": 0.05, **opts}
    return load_model("api:test-model", **opts)


def test_normal_reply(serve) -> None:
    s = serve(reply("Susan Fox", tokens=3))
    model = make(s)
    assert model.kind == "api"
    [g] = model.generate([_Sample(0)], None, max_new_tokens=32)
    assert g.text == "Susan Fox" and g.num_tokens == 3 and g.nfe == 3 and sum(g.tokens_per_step) == 3
    req = s.requests[0]
    assert req["auth"] == "Bearer k-test" and req["body"]["model"] == "test-model"
    assert req["body"]["max_tokens"] == 32 and req["body"]["messages"] == MSGS


def test_429_then_success_honours_retry_after(serve) -> None:
    s = serve(status(429, retry_after=0.2), reply("ok"))
    model = make(s)
    began = time.perf_counter()
    [g] = model.generate([_Sample(0)], None, max_new_tokens=8)
    assert g.text == "ok" and len(s.requests) == 2
    assert time.perf_counter() - began >= 0.2  # waited as the server asked, not the 0.01 s backoff


def test_5xx_is_retried_with_backoff_then_gives_up_in_one_line(serve) -> None:
    s = serve(status(503), status(502), reply("fine"))
    [g] = make(s).generate([_Sample(0)], None, max_new_tokens=8)
    assert g.text == "fine" and len(s.requests) == 3
    s2 = serve(status(500))
    [failed] = make(s2, max_retries=2).generate([_Sample(0)], None, max_new_tokens=8)
    assert failed.error.startswith("HTTP 500") and "after 3 tries" in failed.error and failed.text == ""
    assert len(s2.requests) == 3 and "\n" not in failed.error
    with pytest.raises(APIError, match="HTTP 500"):  # one request on its own raises, in one line
        make(s2, max_retries=0).complete(MSGS, 8)


def test_client_errors_are_not_retried(serve) -> None:
    s = serve(status(401))
    with pytest.raises(APIError, match="rejected the API key"):
        make(s).generate([_Sample(0)], None, max_new_tokens=8)
    assert len(s.requests) == 1


def test_timeout_is_retried_then_reported(serve) -> None:
    s = serve(reply("late", delay=0.5), reply("quick"))
    [g] = make(s, timeout=0.2).generate([_Sample(0)], None, max_new_tokens=8)
    assert g.text == "quick"
    s2 = serve(reply("late", delay=0.5))
    [failed] = make(s2, timeout=0.1, max_retries=1).generate([_Sample(0)], None, max_new_tokens=8)
    assert failed.error.startswith("timeout: no complete reply within 0.1 s") and "\n" not in failed.error


def test_streamed_chunks_count_as_diffusion_steps(serve) -> None:
    s = serve(stream(['["Su', '["Susan F', '["Susan Fox"]'], tokens=6))
    [g] = make(s, diffusing=True).generate([_Sample(0)], None, max_new_tokens=16)
    assert g.text == '["Susan Fox"]' and g.nfe == 3 and g.num_tokens == 6 and g.tokens_per_step == [2, 2, 2]
    body = s.requests[0]["body"]
    assert body["stream"] is True and body["diffusing"] is True
    s2 = serve(stream(["Susan", " Fox"], tokens=2))  # ordinary delta streaming appends
    [g2] = make(s2, stream=True).generate([_Sample(0)], None, max_new_tokens=16)
    assert g2.text == "Susan Fox" and g2.nfe == 2


def test_missing_key_is_one_line(monkeypatch) -> None:
    for name in ("PARALLELBENCH_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ModelSpecError, match="needs an API key") as err:
        load_model("api:mercury-coder", base_url="http://127.0.0.1:9/v1")
    assert "\n" not in str(err.value)


def test_key_and_base_from_environment(serve, monkeypatch) -> None:
    s = serve(reply("env"))
    monkeypatch.setenv("PARALLELBENCH_API_BASE", s.url)
    monkeypatch.setenv("PARALLELBENCH_API_KEY", "from-env")
    [g] = load_model("api:m").generate([_Sample(0)], None, max_new_tokens=4)
    assert g.text == "env" and s.requests[0]["auth"] == "Bearer from-env"


def test_concurrency_limit_is_respected(serve) -> None:
    s = serve(reply("x", delay=0.1))
    gens = make(s, concurrency=2).generate([_Sample(i) for i in range(6)], None, max_new_tokens=4)
    assert len(gens) == 6 and s.max_active == 2  # six requests, never more than two at once
    s1 = serve(reply("x", delay=0.05))
    make(s1, concurrency=1).generate([_Sample(i) for i in range(3)], None, max_new_tokens=4)
    assert s1.max_active == 1 and len(s1.requests) == 3
