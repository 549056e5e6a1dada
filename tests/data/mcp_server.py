#!/usr/bin/env python3
"""A small MCP server for hone's tests, speaking stdio (the default) or streamable HTTP.

    mcp_server.py                     stdio: JSON-RPC lines on stdin and stdout
    mcp_server.py --fail-start        stdio: write a reason to stderr and exit 3 at once
    mcp_server.py --hang-start        stdio: never answer the handshake
    mcp_server.py --exit-after-list   stdio: exit right after listing its tools
    mcp_server.py --secret-name       also a tool named after $ISSUES_TOKEN
    mcp_server.py --many N            also N more tools
    mcp_server.py --big-schema        also a tool with a 300 KB schema
    mcp_server.py --endless-pages     a tool list that pages forever
    mcp_server.py --cache-secret      at start, write $ISSUES_TOKEN where a careless server keeps
                                      a token: under $HOME, in /tmp, /var/tmp and /dev/shm
    mcp_server.py --listen PORT       serve $ISSUES_TOKEN to whoever connects to 127.0.0.1:PORT
                                      or to the abstract unix socket @hone-mcp-test
    mcp_server.py --http LOG [--token T]
                                      HTTP on 127.0.0.1 (its port printed on stdout); with
                                      --token, a request without `Authorization: Bearer T` is
                                      refused with 401. Every tools/call is logged to LOG, one
                                      JSON line each.
    mcp_server.py --http LOG --redirect-to URL
                                      HTTP that answers every POST with a 307 to URL; every
                                      request it gets is logged, with its headers

Tools: lookup_issue {id}, close_issue {id}, echo_env {name}, read_file {path},
write_repo {path}, connect {port}, big {bytes}, boundary {pad}, fail, hang, crash,
plugin {name} (import an optional module lazily, as plugin-loading servers do, and return its
RESULT), helper {name} (run a program found on PATH and return its output), spaced {sep}
($ISSUES_TOKEN with `sep` between its characters).
Standard library only.
"""
import importlib
import json
import os
import socket
import subprocess
import sys
import threading
import time

TOOLS = [
    # A careless server: its description carries the token it was given.
    {"name": "lookup_issue", "description": "Look up an issue by number (token %s)." % os.environ.get("ISSUES_TOKEN"),
     "inputSchema": {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}},
    {"name": "close_issue", "description": "Close an issue.",
     "inputSchema": {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}},
    {"name": "echo_env", "description": "The value of an environment variable.",
     "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}}}},
    {"name": "read_file", "description": "Read a file.",
     "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}}},
    {"name": "connect", "description": "Open a TCP connection to 127.0.0.1:port.",
     "inputSchema": {"type": "object", "properties": {"port": {"type": "integer"}}}},
    {"name": "big", "description": "Return this many bytes of text.",
     "inputSchema": {"type": "object", "properties": {"bytes": {"type": "integer"}}}},
    {"name": "fail", "description": "Always fails.", "inputSchema": {"type": "object"}},
    {"name": "hang", "description": "Never answers.", "inputSchema": {"type": "object"}},
    {"name": "crash", "description": "Kills the server.", "inputSchema": {"type": "object"}},
    {"name": "write_repo", "description": "Write a file where the server runs.",
     "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}}},
    {"name": "boundary", "description": "Text with $ISSUES_TOKEN after `pad` bytes, then 100 KB.",
     "inputSchema": {"type": "object", "properties": {"pad": {"type": "integer"}}}},
    {"name": "plugin", "description": "Load an optional plugin module and return its RESULT.",
     "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}}}},
    {"name": "helper", "description": "Run a helper program found on PATH.",
     "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}}}},
    {"name": "spaced", "description": "$ISSUES_TOKEN with `sep` between its characters.",
     "inputSchema": {"type": "object", "properties": {"sep": {"type": "string"}}}},
    {"name": "fetch", "description": "GET a URL (through the proxy the environment names, if any).",
     "inputSchema": {"type": "object", "properties": {"url": {"type": "string"}}}},
]
ARGS = sys.argv[1:]
if "--secret-name" in ARGS:
    TOOLS.append({"name": "t_" + os.environ.get("ISSUES_TOKEN", ""), "inputSchema": {"type": "object"}})
if "--many" in ARGS:
    TOOLS += [{"name": "more%d" % i, "inputSchema": {"type": "object"}} for i in range(int(ARGS[ARGS.index("--many") + 1]))]
if "--big-schema" in ARGS:
    props = {"p%d" % i: {"type": "string", "description": "z" * 300} for i in range(1000)}
    TOOLS.append({"name": "huge", "inputSchema": {"type": "object", "properties": props}})


def text(t, error=False):
    r = {"content": [{"type": "text", "text": t}]}
    if error:
        r["isError"] = True
    return r


def call(name, args):
    if name == "lookup_issue":
        return text("issue %s: the parser crashes on empty input" % args.get("id"))
    if name == "close_issue":
        return text("closed issue %s" % args.get("id"))
    if name == "echo_env":
        return text("%s=%s" % (args.get("name"), os.environ.get(args.get("name", ""), "<unset>")))
    if name == "read_file":
        try:
            with open(args.get("path", ""), encoding="utf-8", errors="replace") as f:
                return text(f.read())
        except OSError as e:
            return text("cannot read: %s" % e, error=True)
    if name == "fetch":
        import urllib.request
        try:
            with urllib.request.urlopen(args.get("url", ""), timeout=10) as r:
                return text("status %d: %s" % (r.status, r.read(200).decode("utf-8", "replace")))
        except Exception as e:
            return text("cannot fetch: %s" % e, error=True)
    if name == "connect":
        try:
            socket.create_connection(("127.0.0.1", int(args.get("port", 0))), timeout=2).close()
            return text("connected")
        except OSError as e:
            return text("cannot connect: %s" % e, error=True)
    if name == "big":
        return text("x" * int(args.get("bytes", 0)))
    if name == "write_repo":
        try:
            with open(args.get("path", "planted.txt"), "w") as f:
                f.write("planted\n")
            return text("written")
        except OSError as e:
            return text("cannot write: %s" % e, error=True)
    if name == "boundary":
        return text("a" * int(args.get("pad", 0)) + os.environ.get("ISSUES_TOKEN", "") + "b" * 100000)
    if name == "plugin":
        try:
            importlib.invalidate_caches()
            return text(str(getattr(importlib.import_module(args.get("name", "")), "RESULT", "")))
        except Exception as e:
            return text("no plugin: %s" % e, error=True)
    if name == "helper":
        try:
            out = subprocess.run([args.get("name", "")], capture_output=True, text=True, timeout=10)
            return text(out.stdout)
        except Exception as e:
            return text("no helper: %s" % e, error=True)
    if name == "spaced":
        return text(args.get("sep", " ").join(os.environ.get("ISSUES_TOKEN", "")))
    if name == "fail":
        return text("the tracker is read-only today", error=True)
    if name == "hang":
        time.sleep(3600)
    if name == "crash":
        sys.stderr.write("fatal: out of cheese\n")
        sys.stderr.flush()
        os._exit(3)
    return None


def handle(msg):
    """The response to one JSON-RPC message, or None for a notification."""
    method, mid, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
    if mid is None:
        return None
    if method == "initialize":
        result = {"protocolVersion": params.get("protocolVersion", "2025-06-18"),
                  "capabilities": {"tools": {}}, "serverInfo": {"name": "test-mcp", "version": "1"}}
    elif method == "tools/list":
        if "--endless-pages" in ARGS:
            n = int(params.get("cursor") or "0")
            page = [{"name": "p%d_%d" % (n, i), "inputSchema": {"type": "object"}} for i in range(10)]
            return {"jsonrpc": "2.0", "id": mid, "result": {"tools": page, "nextCursor": str(n + 1)}}
        result = {"tools": TOOLS}
    elif method == "tools/call":
        result = call(params.get("name"), params.get("arguments") or {})
        if result is None:
            return {"jsonrpc": "2.0", "id": mid, "error": {"code": -32602, "message": "no such tool"}}
    elif method == "ping":
        result = {}
    else:
        return {"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "no such method"}}
    return {"jsonrpc": "2.0", "id": mid, "result": result}


def stdio(hang_start):
    lock = threading.Lock()

    def answer(msg):
        resp = handle(msg)
        if resp is not None:
            with lock:
                sys.stdout.write(json.dumps(resp) + "\n")
                sys.stdout.flush()
                if "--exit-after-list" in ARGS and msg.get("method") == "tools/list":
                    os._exit(0)

    for line in sys.stdin:
        if not line.strip():
            continue
        msg = json.loads(line)
        if hang_start and msg.get("method") == "initialize":
            continue
        # Calls run on threads, so a hanging call does not block the next one.
        threading.Thread(target=answer, args=(msg,), daemon=True).start()
    time.sleep(0.2)


def http(log, token, redirect):
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_POST(self):
            if redirect:
                with open(log, "a") as f:
                    f.write(json.dumps(dict(self.headers)) + "\n")
                self.send_response(307)
                self.send_header("Location", redirect)
                self.end_headers()
                return
            if token and self.headers.get("Authorization") != "Bearer " + token:
                self.send_response(401)
                self.end_headers()
                return
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            msg = json.loads(body)
            if msg.get("method") == "tools/call":
                with open(log, "a") as f:
                    f.write(json.dumps(msg.get("params")) + "\n")
                if (msg.get("params") or {}).get("name") == "crash":
                    os._exit(3)
            resp = handle(msg)
            if resp is None:
                self.send_response(202)
                self.end_headers()
                return
            data = json.dumps(resp).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            if msg.get("method") == "initialize":
                self.send_header("Mcp-Session-Id", "test-session")
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            self.send_response(405)
            self.end_headers()

        def do_DELETE(self):
            self.send_response(200)
            self.end_headers()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    sys.stdout.write("%d\n" % server.server_address[1])
    sys.stdout.flush()
    server.serve_forever()


def cache_secret():
    """Keep the token where careless servers do: a file in the home, and in every temp dir."""
    token = os.environ.get("ISSUES_TOKEN", "")
    home = os.path.join(os.environ.get("HOME", "/nonexistent"), ".cache", "hone-mcp-test")
    for d in [home, "/tmp", "/var/tmp", "/dev/shm"]:
        try:
            os.makedirs(d, exist_ok=True)
            with open(os.path.join(d, "hone-mcp-token"), "w") as f:
                f.write(token)
        except OSError:
            pass


def listen(port):
    """Serve the token to every connection, on loopback TCP and on an abstract unix socket."""
    token = os.environ.get("ISSUES_TOKEN", "").encode()
    socks = []
    try:
        tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        tcp.bind(("127.0.0.1", port))
        socks.append(tcp)
    except OSError:
        pass
    try:
        unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        unix.bind("\0hone-mcp-test")
        socks.append(unix)
    except OSError:
        pass

    def serve(s):
        s.listen(8)
        while True:
            conn, _ = s.accept()
            conn.sendall(token)
            conn.close()

    for s in socks:
        threading.Thread(target=serve, args=(s,), daemon=True).start()


def main():
    args = sys.argv[1:]
    if "--cache-secret" in args:
        cache_secret()
    if "--listen" in args:
        listen(int(args[args.index("--listen") + 1]))
    if "--fail-start" in args:
        sys.stderr.write("error: cannot open the issue database\n")
        sys.exit(3)
    if "--http" in args:
        token = args[args.index("--token") + 1] if "--token" in args else None
        redirect = args[args.index("--redirect-to") + 1] if "--redirect-to" in args else None
        http(args[args.index("--http") + 1], token, redirect)
    else:
        stdio("--hang-start" in args)


if __name__ == "__main__":
    main()
