#!/usr/bin/env python3
# tests/cli/llm_server.py -- a loopback stand-in for the three model APIs
# (OpenAI chat completions, Anthropic Messages, Gemini generateContent), for
# the generate tests: no network, Python's standard library only.
#
#   llm_server.py PORTFILE SCRIPT LOG
#
# Listens on 127.0.0.1 at a free port (written to PORTFILE once listening).
# Every request takes the next line of SCRIPT as its action (ok when the
# script is used up) and is appended to LOG as one JSON line: time, path,
# headers (every one it got, names lowercased: Authorization, x-api-key,
# x-goog-api-key are there when sent), body. Actions:
#   ok        one ```cuda block          two      a ```cpp block, then a ```cuda block
#   nocode    prose only                 trunc    cut at the token limit
#   badjson   a 200 that is not JSON     429      Retry-After: 1, no body of use
#   500       a server error             401      bad key          404  unknown model
#   html      a 200 holding a proxy's HTML error page (not the API's JSON)
#   errobj    a 200 holding an error object (a router's upstream failure)
#   noparts   a 200 in the API's shape without the text (a refusal, a SAFETY block)
#   slow:S    sleep S seconds, then ok   stall    sleep an hour (for kill -9)
#   echo      ok, with the request's headers in the text (a key must not reach a file)
#   file:PATH a ```cuda block holding the file PATH (pkb agent's scripted
#             conversations: each step's reply a different candidate)
#   pyfile:PATH  the same in a ```python block (a triton candidate)
import json, sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

portfile, script_path, log_path = sys.argv[1:4]
with open(script_path) as f:
    script = [l.strip() for l in f if l.strip()]
lock = threading.Lock()
state = {"n": 0}

CODE_A = '#include "pkb.h"\n// BLOCK-A\nextern "C" int pkb_init(void) { return 0; }\n'
CODE_B = '#include "pkb.h"\n// BLOCK-B\nextern "C" int pkb_run(void) { return 0; }\n'


def text_for(action, headers, arg=""):
    if action in ("file", "pyfile"):
        with open(arg) as f:
            lang = "python" if action == "pyfile" else "cuda"
            return "Here is the next version.\n\n```" + lang + "\n" + f.read() + "```\n"
    if action in ("ok", "slow", "trunc"):
        return "Here is the kernel.\n\n```cuda\n" + CODE_A + "```\n"
    if action == "two":
        return "A sketch:\n```cpp\n" + CODE_A + "```\nThe final file:\n```cuda\n" + CODE_B + "```\n"
    if action == "nocode":
        return "I cannot write this kernel without more information."
    if action == "echo":
        return "headers: " + json.dumps(headers) + "\n```cuda\n" + CODE_A + "```\n"
    return "?"


def reply(path, action, headers, arg=""):
    text = text_for(action, headers, arg)
    trunc = action == "trunc"
    if path.endswith("/chat/completions"):
        return {"id": "chatcmpl-1", "object": "chat.completion",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                             "finish_reason": "length" if trunc else "stop"}],
                "usage": {"prompt_tokens": 1000, "completion_tokens": 50, "total_tokens": 1050}}
    if path.endswith("/messages"):
        return {"id": "msg_1", "type": "message", "role": "assistant",
                "content": [{"type": "text", "text": text}],
                "stop_reason": "max_tokens" if trunc else "end_turn",
                "usage": {"input_tokens": 1000, "output_tokens": 50}}
    if path.endswith(":generateContent"):
        return {"candidates": [{"content": {"role": "model", "parts": [{"text": text}]},
                                "finishReason": "MAX_TOKENS" if trunc else "STOP"}],
                "usageMetadata": {"promptTokenCount": 1000, "candidatesTokenCount": 50}}
    return None


class H(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def send(self, code, body, extra=(), ctype="application/json"):
        data = body.encode() if isinstance(body, str) else body
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        try:
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with lock:
            i = state["n"]
            state["n"] += 1
            action = script[i] if i < len(script) else "ok"
            headers = {k.lower(): v for k, v in self.headers.items()}
            try:
                body = json.loads(raw)
            except ValueError:
                body = raw.decode(errors="replace")
            with open(log_path, "a") as f:
                f.write(json.dumps({"i": i, "t": time.time(), "action": action,
                                    "path": self.path, "headers": headers, "body": body}) + "\n")
        name, _, arg = action.partition(":")
        if name == "slow":
            time.sleep(float(arg or 5))
        elif name == "stall":
            time.sleep(3600)
        if name == "429":
            return self.send(429, '{"error":{"message":"rate limited"}}', [("Retry-After", "1")])
        if name == "500":
            return self.send(500, '{"error":{"message":"overloaded"}}')
        if name in ("401", "404"):
            return self.send(int(name), '{"error":{"message":"no such key or model"}}')
        if name == "badjson":
            return self.send(200, '{"choices": [ this is not json')
        if name == "html":
            return self.send(200, "<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head>"
                             "<body><h1>502 Bad Gateway</h1><p>nginx</p></body></html>",
                             ctype="text/html")
        if name == "errobj":
            return self.send(200, '{"error":{"message":"upstream provider error","code":502}}')
        if name == "noparts":
            return self.send(200, json.dumps({"choices": []} if self.path.endswith("/chat/completions")
                                             else {"content": None, "stop_reason": "refusal"}
                                             if self.path.endswith("/messages")
                                             else {"candidates": [{"finishReason": "SAFETY"}]}))
        r = reply(self.path, name, headers, arg)
        if r is None:
            return self.send(404, '{"error":{"message":"no such path"}}')
        self.send(200, json.dumps(r))


srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
srv.daemon_threads = True
with open(portfile + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
import os
os.rename(portfile + ".tmp", portfile)
srv.serve_forever()
