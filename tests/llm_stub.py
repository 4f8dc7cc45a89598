"""A model endpoint on loopback for the LLM tests (the learning loop's extractor, endless mode's key facts): a real
HTTP server on 127.0.0.1 that speaks the OpenAI-compatible, Anthropic and Ollama shapes, answers every call with
``answer`` (the model's text) and logs each request (path and body)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class Stub:
    """A model endpoint on 127.0.0.1: answers every call with ``answer`` (the model's text), logs each request."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.answer = '{"insights": []}'
        self.respond: Callable[[dict[str, Any]], str] | None = None  # the answer from the request, when set
        self.usage = (1000, 50)
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                stub.requests.append((self.path, body))
                tokens_in, tokens_out = stub.usage
                answer = stub.respond(body) if stub.respond else stub.answer
                if self.path.endswith("/chat/completions"):
                    reply = {"choices": [{"message": {"role": "assistant", "content": answer}}],
                             "usage": {"prompt_tokens": tokens_in, "completion_tokens": tokens_out}}  # fmt: skip
                elif self.path.endswith("/v1/messages"):
                    reply = {"content": [{"type": "text", "text": answer}],
                             "usage": {"input_tokens": tokens_in, "output_tokens": tokens_out}}  # fmt: skip
                elif self.path.endswith("/api/chat"):
                    reply = {"message": {"role": "assistant", "content": answer},
                             "prompt_eval_count": tokens_in, "eval_count": tokens_out}  # fmt: skip
                else:
                    self.send_response(404)
                    self.end_headers()
                    return
                data = json.dumps(reply).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)
