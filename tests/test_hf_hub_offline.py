"""An `hf:<owner/name>` id without a reachable hub answers within seconds in one line (issue 16 item 6).

The hub is made unreachable without mocks: HF_ENDPOINT points at a loopback port that
nothing listens on, and HF_HOME at an empty folder, in a fresh `parallelbench` process.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("huggingface_hub")

SRC = Path(__file__).resolve().parents[1] / "src"


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # released on close: a connection is refused


def run_cli(tmp_path: Path, *args: str, **env: str) -> tuple[int, str, float]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "TRANSFORMERS_"))}
    environ.update(PYTHONPATH=f"{SRC}{os.pathsep}{environ.get('PYTHONPATH', '')}", HF_HOME=str(tmp_path / "hf-home"),
                   **env)
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "parallelbench.cli", *args], capture_output=True, text=True,
                          env=environ, cwd=tmp_path, timeout=120)
    return proc.returncode, proc.stdout + proc.stderr, time.monotonic() - start


def test_unreachable_hub_is_one_line_within_seconds(tmp_path):
    rc, out, seconds = run_cli(tmp_path, "run", "--model", "hf:some-owner/some-model", "--tasks", "waiting_line/copy",
                               "--out", str(tmp_path / "results.db"), HF_ENDPOINT=f"http://127.0.0.1:{closed_port()}")
    lines = [line for line in out.splitlines() if line.strip()]
    assert rc != 0
    assert len(lines) == 1, out
    assert "cannot be reached" in lines[0] and "hf:some-owner/some-model" in lines[0]
    assert "Traceback" not in out and "Retrying" not in out
    assert seconds < 60, f"took {seconds:.1f} s"  # generous for a loaded CI box: the hub client's retries took 30 s+
    assert not (tmp_path / "results.db").exists()


def test_hub_switched_off_is_one_line(tmp_path):
    rc, out, _ = run_cli(tmp_path, "run", "--model", "hf:some-owner/some-model", "--tasks", "waiting_line/copy",
                         "--out", str(tmp_path / "results.db"), HF_HUB_OFFLINE="1")
    lines = [line for line in out.splitlines() if line.strip()]
    assert rc != 0 and len(lines) == 1, out
    assert "HF_HUB_OFFLINE" in lines[0] and "Traceback" not in out


def test_a_cached_config_is_used_when_the_hub_is_unreachable(tmp_path, monkeypatch):
    from huggingface_hub import constants

    from parallelbench.models.hf.checkpoint import resolve

    snapshot = tmp_path / "models--some-owner--cached-model" / "snapshots" / ("a" * 40)
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text(json.dumps({"model_type": "llama"}))
    (tmp_path / "models--some-owner--cached-model" / "refs").mkdir()
    (tmp_path / "models--some-owner--cached-model" / "refs" / "main").write_text("a" * 40)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path))
    monkeypatch.setattr(constants, "ENDPOINT", f"http://127.0.0.1:{closed_port()}")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    start = time.monotonic()
    ckpt = resolve("some-owner/cached-model")
    assert time.monotonic() - start < 10
    assert ckpt.config == {"model_type": "llama"} and ckpt.offline and not ckpt.local


def test_probe_reports_reachable_and_unreachable_endpoints():
    import http.server
    import threading

    from parallelbench.models.hf.hub import probe

    server = http.server.HTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)  # answers 501
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        assert probe(f"http://127.0.0.1:{server.server_port}") is None
    finally:
        server.shutdown()
        server.server_close()
    reason = probe(f"http://127.0.0.1:{closed_port()}", timeout=2)
    assert reason and "\n" not in reason
