"""The fixture works: obstore reaches the real moto server through the standard AWS variables only.

These tests pin down the client behaviour the object-store backend will rely on (put-if-absent, ranged
reads, delimiter listings, retries on 503 SlowDown, errors while the store is down).
"""

from __future__ import annotations

import datetime as dt
import os

import obstore as obs
import pytest
from obstore.exceptions import AlreadyExistsError
from obstore.store import S3Store, from_url

from .conftest import MotoServer
from .proxy import FaultProxy

#: a client that gives up fast, for the store-down cases
_QUICK = {
    "retry_config": {
        "max_retries": 2,
        "retry_timeout": dt.timedelta(seconds=5),
        "backoff": {"init_backoff": dt.timedelta(milliseconds=20), "max_backoff": dt.timedelta(seconds=1)},
    },
    "client_options": {"allow_http": True, "connect_timeout": "2s", "timeout": "5s"},
}


def test_server_started_and_env_points_at_it(moto_server: MotoServer, s3_url: str) -> None:
    assert os.environ["AWS_ENDPOINT_URL"] == moto_server.url
    assert moto_server.url.startswith("http://127.0.0.1:")
    assert s3_url.startswith(f"s3://{moto_server.bucket}/t-")
    print(f"moto server started in {moto_server.startup_s:.2f} s")


def test_put_get_list_from_the_url_alone(s3_url: str) -> None:
    store = from_url(s3_url)  # endpoint, keys, region and allow_http all from the environment
    payload = os.urandom(64 * 1024)
    obs.put(store, "runs/r1/run.json", b'{"id": "r1"}')
    obs.put(store, "runs/r1/host-1-0/000000.ttr", payload)
    assert bytes(obs.get(store, "runs/r1/host-1-0/000000.ttr").bytes()) == payload
    assert bytes(obs.get_range(store, "runs/r1/host-1-0/000000.ttr", start=10, end=20)) == payload[10:20]
    listed = sorted(o["path"] for batch in obs.list(store, prefix="runs") for o in batch)
    assert listed == ["runs/r1/host-1-0/000000.ttr", "runs/r1/run.json"]
    top = obs.list_with_delimiter(store, "runs")
    assert top["common_prefixes"] == ["runs/r1"]
    assert top["objects"] == []


def test_fresh_prefix_per_test(s3_url: str) -> None:
    assert obs.list(from_url(s3_url)).collect() == []


def test_put_if_absent_creates_exactly_once(s3_url: str) -> None:
    store = S3Store.from_url(s3_url)
    obs.put(store, "run.json", b"first", mode="create")
    with pytest.raises(AlreadyExistsError):  # moto answers 412 PreconditionFailed to If-None-Match: *
        obs.put(store, "run.json", b"second", mode="create")
    assert bytes(obs.get(store, "run.json").bytes()) == b"first"


def test_slowdown_is_retried_by_the_client(s3_proxy: tuple[str, FaultProxy]) -> None:
    url, proxy = s3_proxy
    store = S3Store.from_url(url)
    proxy.throttle(3)
    obs.put(store, "chunk", b"x" * 1000)
    assert [status for _, _, status in proxy.requests] == [503, 503, 503, None]
    assert bytes(obs.get(store, "chunk").bytes()) == b"x" * 1000


def test_store_down_then_back(s3_proxy: tuple[str, FaultProxy]) -> None:
    url, proxy = s3_proxy
    store = S3Store.from_url(url, **_QUICK)
    proxy.close()
    with pytest.raises(Exception, match="error sending request"):
        obs.put(store, "chunk", b"x")
    proxy.reopen()
    obs.put(store, "chunk", b"x")
    assert bytes(obs.get(store, "chunk").bytes()) == b"x"


def test_put_if_absent_with_a_lost_answer_is_not_retried(s3_proxy: tuple[str, FaultProxy]) -> None:
    """The write lands, the answer is lost: obstore does not retry a conditional put, it raises. The
    writer must then read the object back to learn whether it was its own (a token in run.json)."""
    url, proxy = s3_proxy
    store = S3Store.from_url(url)
    proxy.lose_responses(1, match=lambda method, target: method == "PUT")
    with pytest.raises(Exception, match="error sending request"):
        obs.put(store, "run.json", b'{"writer": "me"}', mode="create")
    assert bytes(obs.get(store, "run.json").bytes()) == b'{"writer": "me"}'
