"""The embedded default's broker (apps/common/fsbroker.py): a consumer polling the queue
folder while producers write never takes a message before it is whole, and loses none."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

from kombu import Connection

from apps.common import fsbroker
from apps.common.fsbroker import Transport

MESSAGES = 400


def _options(folder: Path) -> dict[str, object]:
    return {
        "data_folder_in": str(folder),
        "data_folder_out": str(folder),
        "processed_folder": str(folder.parent / "processed"),
        "store_processed": False,
    }


def _produce(folder: str, start: int) -> None:
    with Connection(transport=Transport, transport_options=_options(Path(folder))) as conn:
        queue = conn.SimpleQueue("q")
        for i in range(start, start + MESSAGES):
            queue.put({"n": i, "pad": "x" * 4096})  # big enough to be caught half-written
        queue.close()


def test_messages_arrive_whole_while_producers_write(tmp_path: Path) -> None:
    folder = tmp_path / "queue"
    folder.mkdir()
    (tmp_path / "processed").mkdir()
    context = multiprocessing.get_context("spawn")
    producers = [
        context.Process(target=_produce, args=(str(folder), k * MESSAGES)) for k in range(2)
    ]
    for p in producers:
        p.start()
    seen: set[int] = set()
    with Connection(transport=Transport, transport_options=_options(folder)) as conn:
        queue = conn.SimpleQueue("q")
        while len(seen) < 2 * MESSAGES:
            message = queue.get(timeout=60)  # raises Empty if something was lost
            seen.add(message.payload["n"])
            message.ack()
        queue.close()
    for p in producers:
        p.join(timeout=60)
        assert p.exitcode == 0
    assert seen == set(range(2 * MESSAGES))
    assert not [f for f in folder.iterdir() if f.name.endswith(".part")]


def test_no_message_file_exists_until_it_is_whole(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    """Deterministic: while a message is being written, a reader listing the queue folder
    finds no file of that queue (kombu's own channel has created it empty by then)."""
    folder = tmp_path / "queue"
    folder.mkdir()
    (tmp_path / "processed").mkdir()
    seen_while_writing: list[list[str]] = []

    def dumps_watching(payload: object) -> str:
        seen_while_writing.append(sorted(f.name for f in folder.glob("*.q.msg")))
        return json.dumps(payload)

    monkeypatch.setattr(fsbroker, "dumps", dumps_watching)
    with Connection(transport=Transport, transport_options=_options(folder)) as conn:
        queue = conn.SimpleQueue("q")
        queue.put({"n": 1})
        assert seen_while_writing == [[]]
        assert len(list(folder.glob("*.q.msg"))) == 1
        assert queue.get(timeout=5).payload == {"n": 1}
        queue.close()


def test_filesystem_urls_mean_it_and_redis_still_redis() -> None:
    from kuaeweb.celery import app

    assert type(Connection("filesystem://").transport) is Transport
    assert app.connection_for_write("redis://127.0.0.1:1/0").transport.driver_type == "redis"
