#!/usr/bin/env python3
"""Test stand-in for the chat service's incoming webhook, over HTTPS.

Python 3 standard library only. Every POST it answers `200 ok` is appended to
the messages file as one JSON line:
    {"path": ..., "payload": <form field `payload` parsed as JSON, or null>,
     "raw": <raw body>, "time": <epoch float>}
Only answered-200 messages are recorded, so "delivered" means "recorded".
Every request (whatever the answer) is also appended to the requests file:
    {"path": ..., "status": <int or "slow">, "time": <epoch float>}
A GET (a heartbeat ping) is answered `200 OK` in mode `ok`, `500` in any
other mode, and recorded in the requests file only, with "method": "GET".

The fault mode is read from the mode file on every request, so a test switches
it at run time by rewriting that file (write a temp file, then rename):
    ok             200, body `ok` (the default when the file is missing/empty)
    status500      500, body `internal_error`
    ratelimit N    429 with `Retry-After: N` for N seconds from the first
                   request seen in this mode, then as `ok`
    pace [N]       at most one message per N seconds (default 1); 429 with
                   `Retry-After: N` beyond that (the chat service's limit)
    slow N         sleeps N seconds, then answers 200 ok but records nothing
                   (the client has given up by then, so it is not delivered)
    badbody        records the message, then 200 with body `no_text` (the
                   chat service took it: a 2xx is delivered)
    status CODE TEXT   answers CODE with body TEXT, as Slack does (403
                   invalid_token, 404 no_service, 410 channel_is_archived,
                   400 invalid_payload, ...); a 2xx CODE records the message
    reject WORD CODE TEXT  answers CODE TEXT to a message whose text holds
                   WORD, and as `ok` to the others (a message refused for good)
    nochannel      a legacy webhook: 404 channel_not_found to a message with
                   a channel override, as `ok` to one without
    retryafter N VALUE  429 with the header `Retry-After: VALUE` verbatim (09,
                   an HTTP date) to the first N requests in this mode, then ok
    echopath CODE  answers CODE with an error text that echoes the request's
                   path, as some services and proxies do: plain, inside the
                   full URL, percent-encoded (either case) and JSON-escaped
    hang [N]       reads the request and never answers (N s, default 600)
    reset          reads the request and resets the connection (RST) before
                   answering
    chaos SEED     a bad day, seeded: of the requests, at random, 10 % get
                   500, 5 % 429 (Retry-After: 1; a flavour's own 429), 5 % a
                   reset, 2 % hang 30 s (the client times out, nothing
                   recorded); the others are accepted; a message whose text
                   holds PERMANENT gets 400 invalid_payload (every flavour)
"down" is simply not running the receiver.

--flavour F (default slack: all of the above) makes it another chat service:
mattermost, rocketchat, teams, googlechat, discord, pagerduty or webhook, each
checking a request as that service does and answering with its own bodies;
their modes are listed in receiver_flavours.py.

Usage: webhook-receiver.py --cert C --key K --messages FILE
                           [--requests FILE] [--mode-file FILE] [--mode MODE]
                           [--bind ADDR] [--port N] [--flavour F]
Prints the bound port on the first line of stdout (port 0 picks a free one).
"""

import argparse
import json
import math
import os
import random
import socket
import ssl
import struct
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import receiver_flavours


class State:
    def __init__(self, args):
        self.args = args
        self.lock = threading.Lock()
        self.mode_key = None
        self.window_start = None
        self.last_accept = None
        self.count = 0
        self.rng = random.Random(0)

    def mode(self):
        text = ""
        if self.args.mode_file:
            try:
                with open(self.args.mode_file, encoding="utf-8") as f:
                    text = f.read().strip()
            except FileNotFoundError:
                text = ""
        text = text or self.args.mode or "ok"
        words = text.split()
        key = (text, self._mtime())
        with self.lock:
            if key != self.mode_key:
                # A new mode (or the same mode written again) starts afresh.
                self.mode_key = key
                self.window_start = None
                self.last_accept = None
                self.count = 0
                if words[0] == "chaos" and len(words) > 1:
                    self.rng = random.Random(int(words[1]))
        return words[0], words[1:]

    def _mtime(self):
        if not self.args.mode_file:
            return None
        try:
            return os.stat(self.args.mode_file).st_mtime_ns
        except FileNotFoundError:
            return None

    def append(self, path, record):
        line = json.dumps(record, ensure_ascii=False) + "\n"
        with self.lock:
            with open(path, "a", encoding="utf-8") as f:
                f.write(line)
                f.flush()


def make_handler(state):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "hostguard-test-receiver"

        def log_message(self, fmt, *args):  # keep the test output quiet
            pass

        def answer(self, status, body, headers=(), content_type="text/html"):
            data = body.encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            for name, value in headers:
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()

        def note(self, status, now):
            if state.args.requests:
                state.append(state.args.requests,
                             {"path": self.path, "status": status, "time": now})

        def record(self, raw, now, status=200, body="ok", payload=None):
            # Record before answering: once the client sees the answer the
            # line is in the file, so a test may read it right after the run.
            state.append(state.args.messages,
                         {"path": self.path, "payload": payload,
                          "raw": raw, "time": now})
            self.note(status, now)
            self.answer(status, body)

        def status_answer(self, code, body, raw, now, payload):
            # A 2xx counts as delivered (recorded); anything else is only noted.
            if 200 <= code < 300:
                self.record(raw, now, code, body, payload)
            else:
                self.note(code, now)
                self.answer(code, body)

        def reset(self, now):
            self.note("reset", now)
            self.close_connection = True
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                       struct.pack("ii", 1, 0))
            self.connection.close()

        def do_GET(self):
            now = time.time()
            name, _ = state.mode()
            status = 200 if name == "ok" else 500
            if state.args.requests:
                state.append(state.args.requests,
                             {"path": self.path, "status": status,
                              "time": now, "method": "GET"})
            self.answer(status, "OK" if status == 200 else "internal_error")

        def flavoured(self, raw, now, name, params):
            # Another service's flavour: its checks, answers and modes.
            if name == "hang":
                self.note("hang", now)
                time.sleep(float(params[0]) if params else 600.0)
                return
            if name == "reset":
                self.reset(now)
                return
            if name == "status500":
                self.note(500, now)
                self.answer(500, "internal_error")
                return
            if name == "chaos":
                if self.chaos(raw, now):
                    return
                name = "ok"
            reply = receiver_flavours.reply(
                state.args.flavour, name, params, self.path,
                self.headers.get("Content-Type", ""), raw, now, state)
            if reply.record is not None:
                record = {"path": self.path, "raw": raw, "time": now,
                          "flavour": state.args.flavour}
                record.update(reply.record)
                state.append(state.args.messages, record)
            self.note(reply.label, now)
            self.answer(reply.status, reply.body, reply.headers,
                        reply.content_type)

        def chaos(self, text, now):
            """Mode chaos: a fault at random, or PERMANENT's 400 (the
            flavours' classifiers all read a bare 400 as the message's
            fault); False when the request is to be accepted."""
            if "PERMANENT" in text:
                self.note(400, now)
                self.answer(400, "invalid_payload")
                return True
            with state.lock:
                roll = state.rng.random()
            if roll < 0.10:
                self.note(500, now)
                self.answer(500, "internal_error")
            elif roll < 0.15:
                # The service's own 429 (a flavour's shape), asking for 1 s.
                limited = receiver_flavours.rate_limited(state.args.flavour, 1.0) \
                    if state.args.flavour != "slack" else None
                self.note(429, now)
                if limited is None:
                    self.answer(429, "rate_limited", [("Retry-After", "1")])
                else:
                    self.answer(429, limited.body, limited.headers, limited.content_type)
            elif roll < 0.20:
                self.reset(now)
            elif roll < 0.22:
                self.note("hang", now)
                time.sleep(30)
            else:
                return False
            return True

        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length).decode("utf-8", "surrogateescape")
            now = time.time()
            name, params = state.mode()
            if state.args.flavour != "slack":
                self.flavoured(raw, now, name, params)
                return
            payload = None
            try:
                form = urllib.parse.parse_qs(raw, keep_blank_values=True,
                                             strict_parsing=False)
                if "payload" in form:
                    payload = json.loads(form["payload"][0])
            except ValueError:
                payload = None
            text = payload.get("text", "") if isinstance(payload, dict) else ""
            with state.lock:
                state.count += 1
                count = state.count
            if name == "status":
                self.status_answer(int(params[0]), " ".join(params[1:]),
                                   raw, now, payload)
                return
            if name == "reject" and params[0] in text:
                self.note(int(params[1]), now)
                self.answer(int(params[1]), " ".join(params[2:]))
                return
            if name == "nochannel" and isinstance(payload, dict) \
                    and "channel" in payload:
                self.note(404, now)
                self.answer(404, "channel_not_found")
                return
            if name == "retryafter" and count <= int(params[0]):
                self.note(429, now)
                self.answer(429, "rate_limited",
                            [("Retry-After", " ".join(params[1:]))])
                return
            if name == "echopath":
                code = int(params[0])
                host = self.headers.get("Host", "")
                quoted = urllib.parse.quote(self.path, safe="")
                body = ("Cannot POST %s (https://%s%s; %s; %s; %s)" % (
                    self.path, host, self.path, quoted,
                    quoted.replace("%2F", "%2f"),
                    json.dumps(self.path).replace("/", "\\/")))
                self.status_answer(code, body, raw, now, payload)
                return
            if name == "hang":
                self.note("hang", now)
                time.sleep(float(params[0]) if params else 600.0)
                return
            if name == "reset":
                self.reset(now)
                return
            if name == "chaos" and self.chaos(text, now):
                return
            if name == "status500":
                self.note(500, now)
                self.answer(500, "internal_error")
                return
            if name == "badbody":
                self.record(raw, now, 200, "no_text", payload)
                return
            if name == "slow":
                seconds = float(params[0]) if params else 30.0
                self.note("slow", now)
                time.sleep(seconds)
                try:
                    self.answer(200, "ok")
                except OSError:
                    pass
                return
            if name == "ratelimit":
                seconds = float(params[0]) if params else 2.0
                with state.lock:
                    if state.window_start is None:
                        state.window_start = now
                    left = state.window_start + seconds - now
                if left > 0:
                    self.note(429, now)
                    self.answer(429, "rate_limited",
                                [("Retry-After", str(math.ceil(left)))])
                    return
            if name == "pace":
                seconds = float(params[0]) if params else 1.0
                with state.lock:
                    if (state.last_accept is not None
                            and now - state.last_accept < seconds):
                        refused = True
                    else:
                        refused = False
                        state.last_accept = now
                if refused:
                    self.note(429, now)
                    self.answer(429, "rate_limited",
                                [("Retry-After", str(math.ceil(seconds)))])
                    return
            if name not in ("ok", "ratelimit", "pace", "reject", "nochannel",
                            "retryafter", "chaos"):
                self.note(500, now)
                self.answer(500, "unknown_test_mode")
                return
            self.record(raw, now, 200, "ok", payload)

    return Handler


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address, handler, context):
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        self.context = context
        super().__init__(address, handler)

    def get_request(self):
        sock, addr = self.socket.accept()
        sock.settimeout(60)
        return sock, addr

    def finish_request(self, request, client_address):
        # Handshake in the handler thread, so a client that never completes
        # it cannot block the accept loop.
        try:
            tls = self.context.wrap_socket(request, server_side=True)
        except (ssl.SSLError, OSError):
            return
        self.RequestHandlerClass(tls, client_address, self)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--messages", required=True)
    parser.add_argument("--requests")
    parser.add_argument("--mode-file")
    parser.add_argument("--mode", default="ok")
    parser.add_argument("--bind", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--flavour", default="slack",
                        choices=receiver_flavours.FLAVOURS)
    args = parser.parse_args()

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(args.cert, args.key)

    state = State(args)
    server = Server((args.bind, args.port), make_handler(state), context)
    print(server.server_address[1], flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
