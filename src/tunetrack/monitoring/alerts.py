"""Alerts: a message to a person's chat or pager when a run needs them.

A run sends one when it fails (with the exception's last line), is killed, raises a health event
(NaN/Inf loss, a loss spike), when the user calls ``Tracker.alert``, and optionally when it finishes;
``tunetrack watch`` sends one when a run crashes or stalls (a process killed with SIGKILL cannot).

Destinations are webhook URLs. Slack and Discord incoming webhooks are recognized by their paths
(``/services/T.../B.../...``, ``/api/webhooks/<id>/<token>``), so a proxy in front of them works too,
and get those services' message format; any other URL gets ``Alert.as_json()`` as a JSON POST.

Sending never happens on the caller's thread: ``Alerter.send`` queues and returns. A daemon thread
posts with a timeout and bounded retries; the same alert of the same run is sent at most once per
``settings.alert_interval()``; a destination that keeps failing is warned about once.
"""

from __future__ import annotations

import json
import queue
import re
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import asdict, dataclass, field
from typing import Any

from .. import settings
from .._warnings import warn_once

LEVELS = ("info", "warn", "error")
#: attempts per destination and alert (a server error or no answer is retried, a refusal is not)
ATTEMPTS = 3
#: alerts waiting to be sent; more are dropped (a flood of them says nothing the first did not)
BACKLOG = 100
_SLACK = re.compile(r"/services/T\w+/B\w+/\w+/?$")
_DISCORD = re.compile(r"/api/webhooks/\d+/[\w-]+/?$")
_COLORS = {"info": 0x3B82F6, "warn": 0xF59E0B, "error": 0xDC2626}


@dataclass
class Alert:
    """One alert, about one run. ``as_json()`` is the documented body a generic webhook receives."""

    title: str
    text: str
    level: str
    run_id: str | None
    name: str | None
    project: str | None
    state: str
    time: float = field(default_factory=time.time)

    @property
    def link(self) -> str | None:
        base = settings.dashboard_url()
        return f"{base}/run/{self.run_id}" if base and self.run_id else None

    def as_json(self) -> dict[str, Any]:
        return {**asdict(self), "link": self.link}

    def line(self) -> str:
        """``[level] title: run name (id) in project, state``: the heading of a chat message."""
        where = f" in {self.project}" if self.project else ""
        return f"[{self.level}] {self.title}: run {self.name} ({self.run_id}){where}, {self.state}"


def kind(url: str) -> str:
    """``slack``, ``discord`` or ``json``: how a destination wants its messages."""
    path = urllib.parse.urlsplit(url).path
    if _SLACK.search(path):
        return "slack"
    if _DISCORD.search(path):
        return "discord"
    return "json"


def body(url: str, alert: Alert) -> dict[str, Any]:
    """What is posted to ``url`` for ``alert``."""
    link = alert.link
    if kind(url) == "slack":
        text = f"*{alert.line()}*" + (f"\n{alert.text}" if alert.text else "")
        return {"text": text + (f"\n<{link}|open in tunetrack>" if link else "")}
    if kind(url) == "discord":
        embed = {"title": alert.line()[:256], "description": alert.text[:4096], "color": _COLORS[alert.level]}
        return {"content": None, "embeds": [{**embed, **({"url": link} if link else {})}]}
    return alert.as_json()


def _shown(url: str) -> str:
    """A webhook URL without its secret part (the path and query hold the token)."""
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}/..."


def valid(urls: list[str]) -> list[str]:
    """The http(s) URLs of ``urls``; each other one is warned about once and left out."""
    out = []
    for url in urls:
        if urllib.parse.urlsplit(url).scheme in ("http", "https"):
            out.append(url)
        else:
            warn_once(f"alert-url:{url}", f"alerts cannot be sent to {url!r}: give an http(s) webhook URL")
    return out


class Alerter:
    """Sends alerts to ``urls`` from a daemon thread (started with the first alert)."""

    def __init__(self, urls: list[str], interval: float | None = None) -> None:
        self.urls = valid(urls)
        self.interval = settings.alert_interval() if interval is None else interval
        self.timeout = settings.alert_timeout()
        self._queue: queue.Queue[Alert] = queue.Queue(maxsize=BACKLOG)
        self._last: dict[tuple[Any, ...], float] = {}
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        #: alerts not sent because the same one went out within ``interval``, or the backlog was full
        self.suppressed = 0

    def send(self, alert: Alert, key: tuple[Any, ...] | None = None) -> bool:
        """Queue ``alert`` (never blocks, never raises); False if it was rate-limited or dropped.
        ``key`` says which alerts are "the same" (default: the run and the title)."""
        if not self.urls:
            return False
        key = key or (alert.run_id, alert.title)
        now = time.monotonic()
        with self._lock:
            if key in self._last and now - self._last[key] < self.interval:
                self.suppressed += 1
                return False
            self._last[key] = now
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="tunetrack-alerts", daemon=True)
                self._thread.start()
        try:
            self._queue.put_nowait(alert)
        except queue.Full:
            self.suppressed += 1
            return False
        return True

    def close(self, timeout: float | None = None) -> bool:
        """Wait (up to ``timeout``, default one request's timeout) for the queued alerts to go out;
        False if some had not."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while self._queue.unfinished_tasks and time.monotonic() < deadline:
            time.sleep(0.01)
        return not self._queue.unfinished_tasks

    def _run(self) -> None:
        while True:
            alert = self._queue.get()
            try:
                for url in self.urls:
                    self._post(url, body(url, alert))
            finally:
                self._queue.task_done()

    def _post(self, url: str, payload: dict[str, Any]) -> None:
        data = json.dumps(payload, default=str, allow_nan=False).encode()
        request = urllib.request.Request(
            url,
            data=data,
            method="POST",
            headers={"Content-Type": "application/json", "User-Agent": "tunetrack"},
        )
        for attempt in range(ATTEMPTS):
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    response.read()
                return
            except urllib.error.HTTPError as exc:
                error: Exception = exc
                if exc.code < 500 and exc.code != 429:
                    break  # refused: asking again will not help
            except (OSError, ValueError) as exc:  # no answer, a timeout, a bad address
                error = exc
            if attempt + 1 < ATTEMPTS:
                time.sleep(0.5 * 2**attempt)
        warn_once(
            f"alert-send:{url}",
            f"could not send an alert to {_shown(url)} ({error}); further failures there are not reported",
        )
