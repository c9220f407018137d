"""Fault injection (issue 16 item 8): `parallelbench run --model api:...` against a real loopback
HTTP server that misbehaves: 429 storms, 500s, slow drips, resets mid-stream, malformed and
oversized replies, redirects. Nothing of the HTTP layer is mocked. Each scenario checks: no
traceback, the key in no output or file, every sample that did not fail stored once, and the
failed ones retried (and only those) by a re-run. Backoffs are tiny, so the suite takes seconds.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import sqlite3
import struct
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from typer.testing import CliRunner

from parallelbench.cli import app

KEY = "sk-fault-SECRET-7f3a9c0e51b2d4a6"
TASK = "waiting_line/copy"
N = 4  # samples per run


class FaultServer:
    """A loopback OpenAI-compatible server; `behave(handler, body, prompt, nth)` answers each request,
    where `nth` counts this prompt's requests (0 for its first)."""

    def __init__(self, behave):
        self.behave = behave
        self.log: list[tuple[str, str | None]] = []  # (prompt, Authorization header) per request
        self.seen: dict[str, int] = {}
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                prompt = body["messages"][-1]["content"]
                with outer.lock:
                    outer.log.append((prompt, self.headers.get("Authorization")))
                    nth = outer.seen.get(prompt, 0)
                    outer.seen[prompt] = nth + 1
                outer.behave(self, body, prompt, nth)

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request, client_address):  # a dropped client is the point here
                pass

        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


# -- behaviours -----------------------------------------------------------------------------
def answer(h, text="[\"ok\"]", tokens=3):
    data = json.dumps({"choices": [{"message": {"role": "assistant", "content": text}}],
                       "usage": {"completion_tokens": tokens}}).encode()
    h.send_response(200)
    h.send_header("Content-Type", "application/json")
    h.send_header("Content-Length", str(len(data)))
    h.end_headers()
    h.wfile.write(data)


def status(h, code, text=b"{}", retry_after=None):
    h.send_response(code)
    if retry_after is not None:
        h.send_header("Retry-After", retry_after)
    h.send_header("Content-Length", str(len(text)))
    h.end_headers()
    h.wfile.write(text)


def sse(h, chunks, *, done=True, reset_after=None):
    h.send_response(200)
    h.send_header("Content-Type", "text/event-stream")
    h.end_headers()
    for i, text in enumerate(chunks):
        if reset_after is not None and i == reset_after:
            h.wfile.flush()
            h.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            h.connection.close()  # RST: the connection drops mid-stream
            return
        h.wfile.write(f"data: {json.dumps({'choices': [{'delta': {'content': text}}]})}\n\n".encode())
        h.wfile.flush()
    if done:
        h.wfile.write(b"data: [DONE]\n\n")


@pytest.fixture
def serve():
    servers = []

    def start(behave):
        s = FaultServer(behave)
        servers.append(s)
        return s
    yield start
    for s in servers:
        s.close()


def run(tmp_path: Path, url: str, *opts: str, db: str = "r.db"):
    args = ["run", "--model", "api:fault-model", "--tasks", TASK, "--limit", str(N), "--db", str(tmp_path / db),
            "--no-progress", "--no-report", "--model-opt", f"base_url={url}", "--model-opt", f"api_key={KEY}",
            "--model-opt", "backoff=0.01", "--model-opt", "max_backoff=0.02", "--model-opt", "timeout=2"]
    for o in opts:
        args += ["--model-opt", o]
    result = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output and KEY not in result.output
    return result


def rows(tmp_path: Path, db: str = "r.db") -> list[tuple]:
    con = sqlite3.connect(tmp_path / db)
    try:
        return con.execute("SELECT sample_id, status, error, output FROM results ORDER BY sample_id").fetchall()
    finally:
        con.close()


def no_key_in_files(tmp_path: Path) -> None:
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path


def check_stored_once(tmp_path: Path) -> None:
    ids = [r[0] for r in rows(tmp_path)]
    assert len(ids) == len(set(ids)) == N


# -- scenarios ------------------------------------------------------------------------------
def test_429_storm_fails_in_one_line_then_a_rerun_retries_only_the_failed(serve, tmp_path: Path) -> None:
    storm = {"on": True}

    def behave(h, body, prompt, nth):
        if storm["on"] or prompt.endswith("#odd"):
            status(h, 429, retry_after="inf")  # an endless wait asked for: capped, then ignored
        else:
            answer(h)
    s = serve(behave)
    began = time.perf_counter()
    first = run(tmp_path, s.url, "max_retries=2", "max_retry_after=0.05")
    assert time.perf_counter() - began < 15
    assert first.exit_code == 1
    assert f"{N} of {N} samples failed: 429 rate limited; re-run to retry them" in first.output
    assert len(s.log) == N * 3 and all(auth == f"Bearer {KEY}" for _, auth in s.log)
    stored = rows(tmp_path)
    assert [r[1] for r in stored] == ["failed"] * N and all(r[2].startswith("429 rate limited") for r in stored)
    shown = CliRunner().invoke(app, ["results", "--db", str(tmp_path / "r.db")], env={"COLUMNS": "200"})
    assert "failed samples are stored without a score" in shown.output  # failed rows are not wrong answers

    storm["on"] = False
    before = len(s.log)
    second = run(tmp_path, s.url)
    assert second.exit_code == 0, second.output
    assert len(s.log) - before == N and [r[1] for r in rows(tmp_path)] == ["ok"] * N
    check_stored_once(tmp_path)
    third = run(tmp_path, s.url)
    assert third.exit_code == 0 and len(s.log) - before == N  # nothing left to do: no request
    no_key_in_files(tmp_path)


def test_retry_after_is_capped(serve, tmp_path: Path) -> None:
    def behave(h, body, prompt, nth):
        if nth == 0:
            status(h, 503, retry_after="3600")  # an hour, asked by the server
        else:
            answer(h)
    s = serve(behave)
    began = time.perf_counter()
    result = run(tmp_path, s.url, "max_retry_after=0.1")
    assert result.exit_code == 0 and time.perf_counter() - began < 10
    check_stored_once(tmp_path)


def test_persistent_500s_fail_some_samples_the_others_are_stored_once(serve, tmp_path: Path) -> None:
    healed = {"on": False}

    def behave(h, body, prompt, nth):
        if not healed["on"] and prompt in list(s.seen)[:2]:  # the first two samples asked keep failing
            status(h, 500, b'{"error": "internal"}')
        else:
            answer(h)
    s = serve(behave)
    first = run(tmp_path, s.url, "max_retries=1", "concurrency=1")
    assert first.exit_code == 1 and f"2 of {N} samples failed: HTTP 500" in first.output
    stored = rows(tmp_path)
    assert sorted(r[1] for r in stored) == ["failed", "failed", "ok", "ok"]
    assert len(s.log) == 2 * 2 + 2  # two samples tried twice each, two answered at once

    healed["on"] = True
    before = len(s.log)
    assert run(tmp_path, s.url).exit_code == 0
    assert sorted(p for p, _ in s.log[before:]) == sorted(list(s.seen)[:2])  # only the failed two were asked again
    check_stored_once(tmp_path)


def test_a_slow_drip_hits_the_total_deadline(serve, tmp_path: Path) -> None:
    def behave(h, body, prompt, nth):
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", "1000")
        h.end_headers()
        try:
            for _ in range(40):  # one byte every 0.1 s: each read is quick, the whole reply never is
                h.wfile.write(b" ")
                h.wfile.flush()
                time.sleep(0.1)
        except OSError:
            pass
    s = serve(behave)
    began = time.perf_counter()
    result = run(tmp_path, s.url, "timeout=0.5", "max_retries=0")
    took = time.perf_counter() - began
    assert result.exit_code == 1 and f"{N} of {N} samples failed: timeout" in result.output
    assert took < 3.5, took  # four requests at once, 0.5 s each: not the 4 s the server would take
    assert all(r[2].startswith("timeout: no complete reply within 0.5 s") for r in rows(tmp_path))


@pytest.mark.parametrize("mode", ["stream=true", "diffusing=true"])
def test_connection_reset_mid_stream_is_retried(serve, tmp_path: Path, mode: str) -> None:
    def behave(h, body, prompt, nth):
        if nth == 0:
            sse(h, ['["Ma', '["Mason', '["Mason G'], reset_after=1)  # first try drops after one chunk
        else:
            sse(h, ['["a"', ']'] if mode == "stream=true" else ['["a', '["a"]'])
    s = serve(behave)
    result = run(tmp_path, s.url, mode)
    assert result.exit_code == 0, result.output
    assert [r[3] for r in rows(tmp_path)] == ['["a"]'] * N and len(s.log) == 2 * N
    check_stored_once(tmp_path)


def test_streams_that_always_drop_become_failed_rows(serve, tmp_path: Path) -> None:
    def behave(h, body, prompt, nth):
        if prompt == first_prompt[0]:
            sse(h, ['["x'], done=False)  # ends without [DONE] or finish_reason: truncated
        else:
            sse(h, ['["a', '["a"]'])
    first_prompt: list[str] = []
    s = serve(lambda h, b, p, n: (first_prompt or first_prompt.append(p), behave(h, b, p, n)))
    result = run(tmp_path, s.url, "diffusing=true", "max_retries=1", "concurrency=1")
    assert result.exit_code == 1 and f"1 of {N} samples failed: connection dropped" in result.output
    stored = rows(tmp_path)
    assert sorted(r[1] for r in stored) == ["failed", "ok", "ok", "ok"]


@pytest.mark.parametrize("reply,expected", [
    (b"<html>gateway</html>", "malformed reply: the reply is not JSON"),
    (b'{"object": "chat.completion"}', "malformed reply: the reply has no choices"),
    (b'{"choices": [{"message": {"content": 42}}]}', "malformed reply: message content is a int"),
    (b"[1, 2]", "malformed reply: the reply is not a JSON object"),
])
def test_malformed_replies_are_failed_rows(serve, tmp_path: Path, reply: bytes, expected: str) -> None:
    s = serve(lambda h, body, prompt, nth: status(h, 200, reply))
    result = run(tmp_path, s.url)
    assert result.exit_code == 1 and f"{N} of {N} samples failed: malformed reply" in result.output
    assert all(r[2].startswith(expected) for r in rows(tmp_path))
    assert len(s.log) == N  # a malformed reply is not retried


def test_a_truncated_body_counts_as_a_dropped_connection(serve, tmp_path: Path) -> None:
    def behave(h, body, prompt, nth):
        h.send_response(200)
        h.send_header("Content-Length", "500")
        h.end_headers()
        h.wfile.write(b'{"choices": [{"mess')
    s = serve(behave)
    result = run(tmp_path, s.url, "max_retries=1")
    assert result.exit_code == 1 and "connection dropped" in result.output and len(s.log) == 2 * N


@pytest.mark.parametrize("streamed", [False, True])
def test_oversized_replies_are_cut_off(serve, tmp_path: Path, streamed: bool) -> None:
    big = "x" * 300_000

    def behave(h, body, prompt, nth):
        if streamed:
            sse(h, [big[:1000]] * 300)
        else:
            h.send_response(200)  # no Content-Length: the cap must hold while reading
            h.end_headers()
            h.wfile.write(json.dumps({"choices": [{"message": {"content": big}}]}).encode())
    s = serve(behave)
    result = run(tmp_path, s.url, "max_reply_bytes=50000", *(["stream=true"] if streamed else []))
    assert result.exit_code == 1 and f"{N} of {N} samples failed: reply too large" in result.output
    assert all("max_reply_bytes=50000" in r[2] for r in rows(tmp_path))


def test_redirects_keep_the_key_at_home(serve, tmp_path: Path) -> None:
    other = serve(lambda h, body, prompt, nth: answer(h, '["moved"]'))

    def behave(h, body, prompt, nth):
        # /v1 -> /v2 on the same server (same origin), then /v2 -> the other server (another port)
        target = "/v2/chat/completions" if h.path.startswith("/v1/") else other.url + "/chat/completions"
        h.send_response(307)
        h.send_header("Location", target)
        h.send_header("Content-Length", "0")
        h.end_headers()
    home = serve(behave)
    result = run(tmp_path, home.url, "concurrency=1")
    assert result.exit_code == 0, result.output
    assert len(home.log) == 2 * N and all(auth == f"Bearer {KEY}" for _, auth in home.log)  # same origin
    assert len(other.log) == N and all(auth is None for _, auth in other.log)  # another origin: never the key
    assert [r[3] for r in rows(tmp_path)] == ['["moved"]'] * N
    check_stored_once(tmp_path)


def test_the_key_is_redacted_from_server_text_and_a_rejected_key_stops_in_one_line(serve, tmp_path: Path) -> None:
    def behave(h, body, prompt, nth):
        echo = f"bad request from {h.headers.get('Authorization')} (key {KEY[:10]}...{KEY[-4:]})"
        status(h, 400, json.dumps({"error": echo}).encode())
    s = serve(behave)
    result = run(tmp_path, s.url)
    assert result.exit_code == 1 and "HTTP 400" in result.output
    assert all("***" in r[2] and "SECRET" not in r[2] for r in rows(tmp_path))
    no_key_in_files(tmp_path)

    rejected = serve(lambda h, body, prompt, nth: status(h, 401, json.dumps({"error": KEY}).encode()))
    refused = run(tmp_path, rejected.url, db="other.db")
    assert refused.exit_code == 2 and "rejected the API key" in refused.output
    assert len([ln for ln in refused.output.splitlines() if ln.strip()]) == 1
    assert not (tmp_path / "other.db").exists()  # nothing saved: no empty database left


def test_the_real_command_line_in_a_subprocess(serve, tmp_path: Path) -> None:
    storm = {"on": True}
    s = serve(lambda h, b, p, n: status(h, 429, retry_after="0") if storm["on"] else answer(h))
    args = [sys.executable, "-m", "parallelbench.cli", "run", "--model", "api:fault-model", "--tasks", TASK,
            "--limit", str(N), "--db", str(tmp_path / "r.db"), "--no-progress", "--no-report",
            "--model-opt", f"base_url={s.url}", "--model-opt", "max_retries=1", "--model-opt", "backoff=0.01"]
    env = {**os.environ, "PARALLELBENCH_API_KEY": KEY, "COLUMNS": "200"}
    first = subprocess.run(args, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    out = first.stdout + first.stderr
    assert first.returncode == 1 and "Traceback" not in out and KEY not in out
    assert f"{N} of {N} samples failed: 429 rate limited; re-run to retry them" in out
    storm["on"] = False
    second = subprocess.run(args, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert second.returncode == 0, second.stderr
    check_stored_once(tmp_path)
    no_key_in_files(tmp_path)


def test_ctrl_c_says_in_one_line_how_many_rows_are_saved(serve, tmp_path: Path) -> None:
    def slow(h, body, prompt, nth):
        time.sleep(0.3)
        answer(h)
    s = serve(slow)
    db = tmp_path / "r.db"
    args = [sys.executable, "-m", "parallelbench.cli", "run", "--model", "api:fault-model", "--tasks", TASK,
            "--limit", "12", "--batch-size", "1", "--db", str(db), "--no-progress", "--no-report",
            "--model-opt", f"base_url={s.url}", "--model-opt", "concurrency=1"]
    env = {**os.environ, "PARALLELBENCH_API_KEY": KEY, "COLUMNS": "200"}
    # As from a terminal: a test run started in the background (`pytest &`, nohup) ignores SIGINT,
    # and the child would inherit that and never see the Ctrl-C.
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.time() + 60
    while time.time() < deadline and len(s.log) < 3:
        time.sleep(0.05)
    proc.send_signal(2)  # SIGINT, as Ctrl-C sends
    out, err = proc.communicate(timeout=60)
    lines = [ln for ln in (out + err).splitlines() if ln.strip()]
    assert proc.returncode == 130 and "Traceback" not in out + err
    assert len(lines) == 1 and "re-run the same command to resume" in lines[0], lines
    saved = int(lines[0].split("interrupted: ")[1].split(" rows")[0].replace(",", ""))
    assert saved == len(rows(tmp_path)) >= 2


def test_a_reply_echoing_the_key_does_not_store_it(serve, tmp_path: Path) -> None:
    def echo(h, body, prompt, nth):
        if body.get("stream"):
            sse(h, [f"your key is {h.headers.get('Authorization')}"])
        else:
            answer(h, f"your key is {h.headers.get('Authorization')}")
    s = serve(echo)
    assert run(tmp_path, s.url).exit_code == 0
    assert run(tmp_path, s.url, "stream=true", db="s.db").exit_code == 0
    assert all(r[3] == "your key is Bearer ***" for r in rows(tmp_path) + rows(tmp_path, "s.db"))
    no_key_in_files(tmp_path)


def test_a_server_that_ignores_stream_and_answers_json(serve, tmp_path: Path) -> None:
    s = serve(lambda h, body, prompt, nth: answer(h, '["plain"]'))
    assert run(tmp_path, s.url, "diffusing=true").exit_code == 0
    assert [r[3] for r in rows(tmp_path)] == ['["plain"]'] * N


# -- issue 25 item 6: waits you can see, refused connections, a bounded request, no empty report ----------
def test_a_refused_connection_is_reported_as_refused(tmp_path: Path) -> None:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()  # nothing listens there now
    result = run(tmp_path, f"http://127.0.0.1:{port}/v1", "max_retries=1")
    assert result.exit_code == 1, result.output
    assert f"{N} of {N} samples failed: connection refused" in result.output
    assert "connection dropped" not in result.output
    assert all(r[2].startswith(f"connection refused: nothing accepts connections at 127.0.0.1:{port}")
               for r in rows(tmp_path))


def test_one_request_never_takes_longer_than_total_timeout(serve, tmp_path: Path) -> None:
    def silent(h, body, prompt, nth):
        time.sleep(3)  # accepts, never answers in time
    s = serve(silent)
    began = time.perf_counter()
    result = run(tmp_path, s.url, "timeout=0.4", "total_timeout=1", "max_retries=50", "concurrency=4")
    took = time.perf_counter() - began
    assert result.exit_code == 1 and f"{N} of {N} samples failed: timeout" in result.output
    assert took < 6, took  # 50 retries of 0.4 s would be 20 s: the request's total deadline cut them
    assert all("total_timeout" in r[2] for r in rows(tmp_path)), rows(tmp_path)


def test_the_default_total_time_per_request_is_at_most_five_minutes() -> None:
    from parallelbench.models.api.options import APIOptions, parse_options

    assert APIOptions().total_timeout <= 300
    assert parse_options({"total_timeout": "42"}).total_timeout == 42.0


def test_a_pending_request_says_what_it_waits_for(serve) -> None:
    from parallelbench.models.api import load
    from parallelbench.tasks import get_task

    def slow(h, body, prompt, nth):
        time.sleep(1.5)
        answer(h)
    s = serve(slow)
    model = load("fault-model", base_url=s.url, api_key=KEY, timeout=10, max_retries=2)
    assert model.waiting() is None
    seen: list[str] = []
    worker = threading.Thread(target=lambda: model.generate(get_task(TASK).samples(2), None, max_new_tokens=32))
    worker.start()
    deadline = time.time() + 10
    while worker.is_alive() and time.time() < deadline:
        text = model.waiting()
        if text:
            seen.append(text)
        time.sleep(0.1)
    worker.join()
    host = s.url.split("//")[1].split("/")[0]
    assert seen and all(t.startswith(f"waiting for {host}: attempt 1 of 3, ") for t in seen), seen[:3]
    assert any("1 more pending" in t for t in seen) and "gives up at 300 s" in seen[0]
    assert KEY not in " ".join(seen) and model.waiting() is None


def test_piped_output_has_a_plain_waiting_line_and_no_bar(serve, tmp_path: Path, monkeypatch) -> None:
    import parallelbench.runner.progress as progress

    monkeypatch.setattr(progress, "PIPED_WAIT_AFTER_S", 0.2)
    monkeypatch.setattr(progress, "PIPED_WAIT_EVERY_S", 0.5)

    def slow(h, body, prompt, nth):
        time.sleep(2.5)
        answer(h)
    s = serve(slow)
    args = ["run", "--model", "api:fault-model", "--tasks", TASK, "--limit", "1", "--db", str(tmp_path / "r.db"),
            "--no-report", "--model-opt", f"base_url={s.url}", "--model-opt", f"api_key={KEY}"]
    result = CliRunner().invoke(app, args, env={"COLUMNS": "200"})  # progress on, output not a terminal
    assert result.exit_code == 0, result.output
    waits = [ln for ln in result.output.splitlines() if ln.startswith("waiting for 127.0.0.1")]
    assert waits and "attempt 1 of 6" in waits[0]
    bar = re.compile(r"acc +(\d\.\d{3}|-).*eta")  # the live bar's line: model, bar, rows, acc, where, eta
    assert not any(bar.search(ln) for ln in result.output.splitlines())
    assert "\r" not in result.output and "\x1b[" not in result.output


def test_a_run_whose_every_sample_failed_writes_no_empty_report(serve, tmp_path: Path) -> None:
    s = serve(lambda h, body, prompt, nth: status(h, 400, b'{"error": "bad"}'))
    out = tmp_path / "report"
    args = ["run", "--model", "api:fault-model", "--tasks", TASK, "--limit", str(N), "--db", str(tmp_path / "r.db"),
            "--no-progress", "--out", str(out), "--model-opt", f"base_url={s.url}", "--model-opt", f"api_key={KEY}"]
    result = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    assert result.exit_code == 1 and f"{N} of {N} samples failed: HTTP 400" in result.output
    assert "no report written" in result.output and "every sample of this run failed" in result.output
    assert not list(out.rglob("*.html")) if out.exists() else True
