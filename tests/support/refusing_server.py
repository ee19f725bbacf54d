"""Test infrastructure: a loopback endpoint that refuses every request with a 400, for the answers of servers
that can't run here (a hosted API, vLLM, a misconfigured gateway). Not a test module.

    with RefusingServer(lambda headers: {"error": {"message": "no"}}) as server:
        ...  # every POST to server.base_url gets that body, with status 400
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class RefusingServer:
    """Answers every POST with a 400 whose JSON body is `body(headers)`, the request's headers given."""

    def __init__(self, body: Callable[[Message], dict]):
        class Refuse(BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                answer = json.dumps(body(self.headers)).encode()
                self.send_response(400)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Refuse)
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self):
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()
