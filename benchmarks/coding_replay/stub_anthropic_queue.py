#!/usr/bin/env python3
"""A scripted Anthropic Messages API on loopback for the real Claude Code CLI, one response per request.

Derived from ../shared/claude-code/stub_anthropic.py (same wire format: SSE and JSON); the difference is the
script: {"queue": [ITEM, ...]} where each ITEM answers exactly one model request, in order:
  {"text": "...", "tool": "Bash", "input": {...}}   a tool call (optional text before it)
  {"final": "..."}                                   a closing answer (end_turn)
so one prompt can make several tool calls before its answer. Requests that offer no tools (side
requests such as titles or summaries) are answered with "OK" and do not use up the queue.

Usage:  stub_anthropic_queue.py --port 8765 --script queue.json [--log requests.jsonl]
"""

import argparse
import json
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Queue:
    def __init__(self, items):
        self.items, self.i, self.lock = items, 0, threading.Lock()

    def next(self, body):
        if not body.get("tools"):
            return [{"type": "text", "text": "OK"}], "end_turn"
        with self.lock:
            item = self.items[self.i] if self.i < len(self.items) else {"final": "Done."}
            self.i += 1
        if "final" in item:
            return [{"type": "text", "text": item["final"]}], "end_turn"
        blocks = [{"type": "text", "text": item["text"]}] if item.get("text") else []
        blocks.append(
            {"type": "tool_use", "id": "toolu_" + uuid.uuid4().hex[:24], "name": item["tool"], "input": item["input"]}
        )
        return blocks, "tool_use"


def make_handler(queue, log):
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            self._json({})

        do_HEAD = do_GET

        def do_POST(self):
            raw = self.rfile.read(int(self.headers.get("content-length") or 0))
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = {}
            if log:
                with lock, open(log, "a", encoding="utf-8") as f:
                    f.write(json.dumps({"path": self.path, "body": body}) + "\n")
            if "count_tokens" in self.path:
                return self._json({"input_tokens": 100})
            blocks, stop = queue.next(body)
            msg_id, model = "msg_" + uuid.uuid4().hex[:24], body.get("model", "claude-stub")
            usage = {
                "input_tokens": 100,
                "output_tokens": 20,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
            }
            if not body.get("stream"):
                return self._json(
                    {
                        "id": msg_id,
                        "type": "message",
                        "role": "assistant",
                        "model": model,
                        "content": blocks,
                        "stop_reason": stop,
                        "stop_sequence": None,
                        "usage": usage,
                    }
                )
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.end_headers()
            self._sse(
                "message_start",
                {
                    "type": "message_start",
                    "message": {
                        "id": msg_id,
                        "type": "message",
                        "role": "assistant",
                        "model": model,
                        "content": [],
                        "stop_reason": None,
                        "stop_sequence": None,
                        "usage": usage,
                    },
                },
            )
            for i, b in enumerate(blocks):
                if b["type"] == "text":
                    start, delta = {"type": "text", "text": ""}, {"type": "text_delta", "text": b["text"]}
                else:
                    start = {"type": "tool_use", "id": b["id"], "name": b["name"], "input": {}}
                    delta = {"type": "input_json_delta", "partial_json": json.dumps(b["input"])}
                self._sse("content_block_start", {"type": "content_block_start", "index": i, "content_block": start})
                self._sse("content_block_delta", {"type": "content_block_delta", "index": i, "delta": delta})
                self._sse("content_block_stop", {"type": "content_block_stop", "index": i})
            self._sse(
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": {"output_tokens": 20},
                },
            )
            self._sse("message_stop", {"type": "message_stop"})

        def _sse(self, name, data):
            self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
            self.wfile.flush()

        def _json(self, obj):
            data = json.dumps(obj).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=8765)
    ap.add_argument("--script", required=True)
    ap.add_argument("--log")
    a = ap.parse_args()
    with open(a.script, encoding="utf-8") as fh:
        spec = json.load(fh)
    ThreadingHTTPServer(("127.0.0.1", a.port), make_handler(Queue(spec["queue"]), a.log)).serve_forever()


if __name__ == "__main__":
    main()
