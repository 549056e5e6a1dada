#!/usr/bin/env python3
"""A tiny issue tracker served over MCP (stdio, JSON-RPC lines), standard library only.

hone starts it in its jail with `mcp.servers` in the job spec; the policy decides which of its
tools the model is offered (`get_issue` and `search_issues`, not `close_issue`).
"""
import json
import sys

ISSUES = {
    12: "c_to_f(100) returns 203, expected 212. f_to_c(c_to_f(c)) does not give c back.",
    13: "Add kelvin conversions.",
}

TOOLS = [
    {"name": "get_issue", "description": "An issue's text, by number.",
     "inputSchema": {"type": "object", "properties": {"number": {"type": "integer"}}, "required": ["number"]}},
    {"name": "search_issues", "description": "Numbers and texts of issues containing a word.",
     "inputSchema": {"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]}},
    {"name": "close_issue", "description": "Close an issue.",
     "inputSchema": {"type": "object", "properties": {"number": {"type": "integer"}}, "required": ["number"]}},
]


def call(name, args):
    if name == "get_issue":
        n = args.get("number")
        return ISSUES.get(n, "no issue %s" % n), n not in ISSUES
    if name == "search_issues":
        found = ["#%d: %s" % (n, t) for n, t in ISSUES.items() if args.get("word", "") in t]
        return "\n".join(found) or "nothing found", False
    if name == "close_issue":
        return "closed #%s" % args.get("number"), False
    return "no such tool", True


def answer(msg):
    method, params = msg.get("method"), msg.get("params") or {}
    if method == "initialize":
        return {"protocolVersion": params.get("protocolVersion"), "capabilities": {"tools": {}},
                "serverInfo": {"name": "tracker", "version": "1"}}
    if method == "tools/list":
        return {"tools": TOOLS}
    if method == "tools/call":
        text, failed = call(params.get("name"), params.get("arguments") or {})
        return {"content": [{"type": "text", "text": text}], "isError": failed}
    return {}


for line in sys.stdin:
    msg = json.loads(line)
    if "id" in msg:
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": answer(msg)}) + "\n")
        sys.stdout.flush()
