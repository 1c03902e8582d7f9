"""The web app reads request bodies, uploads and replay files with the project's strict
JSON reader, so the reader's refusals (and its linear time on hostile text) hold for the
server too: a 2 MB upload of escaped quotes that never close took hours when that
reader's nesting check was quadratic."""

from __future__ import annotations

import pytest

pytest.importorskip("starlette", reason="the web extra is not installed: pip install -e '.[web]'")
TestClient = pytest.importorskip(
    "starlette.testclient", reason="the web extra is not installed: pip install -e '.[web]'"
).TestClient

from loveletter_env.replay import MAX_REPLAY_BYTES  # noqa: E402
from training.apps.web.app import MAX_JSON_BODY, ServerConfig, create_app  # noqa: E402


def _unclosed_escaped_quotes(size: int) -> bytes:
    return b'"' + b'\\"' * ((size - 1) // 2)


@pytest.fixture
def client(tmp_path):
    with TestClient(create_app(ServerConfig(tmp_path, None, {})), base_url="http://127.0.0.1:8000") as c:
        yield c


def _refusal(answer) -> str:
    assert 400 <= answer.status_code < 500, answer.text
    return answer.json()["error"]


def test_hostile_json_is_refused_by_the_strict_reader_in_every_way_the_app_reads_it(client, tmp_path):
    headers = {"content-type": "application/json"}
    message = "Unterminated string starting at line 1, column 1"
    body = _unclosed_escaped_quotes(MAX_JSON_BODY)
    assert message in _refusal(client.post("/api/games", content=body, headers=headers))
    upload = _unclosed_escaped_quotes(MAX_REPLAY_BYTES)
    assert message in _refusal(client.post("/api/replays", content=upload, headers=headers))
    (tmp_path / "hostile.json").write_bytes(upload)
    assert message in _refusal(client.get("/api/replays/file/hostile.json"))
