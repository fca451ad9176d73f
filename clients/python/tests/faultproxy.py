"""A fault-injecting HTTP proxy in front of idem: it forwards every request,
and for the ones a rule names it loses the answer AFTER the server acted
(the connection closes without a reply) or answers 503 instead of
forwarding. What a client sees when a network or a load balancer fails."""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx


@dataclass
class Rule:
    method: str
    path: str  # a regular expression matched against the path
    action: str  # "lose_answer" or "503"
    times: int = 1
    seen: list[str] = field(default_factory=list)


class FaultProxy:
    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.rules: list[Rule] = []
        self.lock = threading.Lock()
        self.log: list[tuple[str, str, int]] = []
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                pass

            def _handle(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else b""
                rule = proxy._match(self.command, self.path)
                if rule is not None and rule.action == "503":
                    self._reply(503, b'{"type":"urn:idem:problem:unavailable","title":"injected","status":503}', {"retry-after": "0"})
                    proxy._note(self.command, self.path, 503)
                    return
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "content-length", "connection")}
                r = httpx.request(self.command, proxy.upstream + self.path, content=body, headers=headers, timeout=60)
                proxy._note(self.command, self.path, r.status_code)
                if rule is not None and rule.action == "lose_answer":
                    # The server acted; the client never hears of it.
                    self.close_connection = True
                    return
                self._reply(r.status_code, r.content, {"content-type": r.headers.get("content-type", "application/json"), **({"retry-after": r.headers["retry-after"]} if "retry-after" in r.headers else {})})

            def _reply(self, status: int, body: bytes, headers: dict[str, str]) -> None:
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = _handle
            do_POST = _handle

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def add(self, method: str, path: str, action: str, times: int = 1) -> Rule:
        rule = Rule(method, path, action, times)
        with self.lock:
            self.rules.append(rule)
        return rule

    def _match(self, method: str, path: str) -> Rule | None:
        with self.lock:
            for rule in self.rules:
                if rule.times > 0 and rule.method == method and re.search(rule.path, path):
                    rule.times -= 1
                    rule.seen.append(path)
                    return rule
        return None

    def _note(self, method: str, path: str, status: int) -> None:
        with self.lock:
            self.log.append((method, path, status))

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
