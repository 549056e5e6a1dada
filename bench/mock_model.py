#!/usr/bin/env python3
"""A mock OpenAI-compatible model for benchmarks: every answer comes after a fixed delay.

Stateless: a conversation without a tool result gets a write_file call; one with a tool result
gets the final answer. Usage: mock_model.py PORT DELAY_SECONDS
"""
import json
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DELAY = float(sys.argv[2])


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        time.sleep(DELAY)
        done = any(m.get("role") == "tool" for m in body["messages"])
        if done:
            msg = {"role": "assistant", "content": "Set status.txt to fixed."}
            finish = "stop"
        else:
            args = json.dumps({"path": "status.txt", "content": "fixed\n"})
            msg = {"role": "assistant", "content": None,
                   "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "write_file", "arguments": args}}]}
            finish = "tool_calls"
        out = json.dumps({"choices": [{"index": 0, "message": msg, "finish_reason": finish}],
                          "usage": {"prompt_tokens": 1000, "completion_tokens": 20, "total_tokens": 1020}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)


ThreadingHTTPServer.daemon_threads = True
ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
