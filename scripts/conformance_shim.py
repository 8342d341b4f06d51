#!/usr/bin/env python3
"""A loopback shim for the MCP conformance suite: adds `Authorization: Bearer TOKEN`.

The suite (`@modelcontextprotocol/conformance server --url U`) has no way to send a bearer
token, and `serve` answers every `/mcp` request without one with 401. This shim listens on a
free loopback port, prints `listening on http://127.0.0.1:PORT` on stdout, and forwards each
request to UPSTREAM (`host:port` of `serve`) unchanged (method, path, every header, `Host` and
`Origin` included, the body) with the token added when the request carries no `Authorization`
of its own. The answer comes back unchanged (status, headers, body). Python 3 stdlib only.

Usage: conformance_shim.py UPSTREAM_HOST:PORT  (the token is read from $CONFORMANCE_TOKEN)
"""

import http.client
import os
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# Hop-by-hop headers (RFC 9110 7.6.1) are not forwarded in either direction; the shim frames
# each body itself with Content-Length.
HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "content-length",
}
# The largest request body forwarded (serve's own bound is 1 MiB; a little more lets serve
# answer 413 itself).
MAX_BODY = 2 * 1024 * 1024
UPSTREAM_TIMEOUT_S = 60


class Shim(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    upstream = ("127.0.0.1", 0)
    token = ""

    def log_message(self, format, *args):  # noqa: A002 (the base class's name)
        sys.stderr.write("shim: " + (format % args) + "\n")

    def read_request_body(self):
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            body = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return body
                body += self.rfile.read(size)
                self.rfile.readline()
                if len(body) > MAX_BODY:
                    raise ValueError("request body too large for the shim")
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            raise ValueError("request body too large for the shim")
        return self.rfile.read(length) if length else None

    def forward(self):
        try:
            body = self.read_request_body()
        except ValueError as e:
            self.send_error(413, str(e))
            return
        upstream = http.client.HTTPConnection(*self.upstream, timeout=UPSTREAM_TIMEOUT_S)
        try:
            upstream.putrequest(
                self.command, self.path, skip_host=True, skip_accept_encoding=True
            )
            has_auth = False
            for name, value in self.headers.items():
                if name.lower() in HOP_BY_HOP:
                    continue
                has_auth = has_auth or name.lower() == "authorization"
                upstream.putheader(name, value)
            if not has_auth:
                upstream.putheader("Authorization", "Bearer " + self.token)
            if body is not None:
                upstream.putheader("Content-Length", str(len(body)))
            upstream.endheaders(body)
            answer = upstream.getresponse()
            payload = answer.read()
        except OSError as e:
            self.send_error(502, "the shim could not reach serve: %s" % e)
            return
        finally:
            upstream.close()
        self.send_response_only(answer.status, answer.reason)
        for name, value in answer.getheaders():
            if name.lower() not in HOP_BY_HOP:
                self.send_header(name, value)
        no_body = self.command == "HEAD" or answer.status in (204, 304)
        if not no_body:
            self.send_header("Content-Length", str(len(payload)))
        elif answer.getheader("Content-Length") is not None:
            self.send_header("Content-Length", answer.getheader("Content-Length"))
        self.end_headers()
        if not no_body:
            self.wfile.write(payload)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = do_HEAD = forward


def main():
    if len(sys.argv) != 2 or ":" not in sys.argv[1]:
        sys.exit("usage: conformance_shim.py UPSTREAM_HOST:PORT (token in $CONFORMANCE_TOKEN)")
    token = os.environ.get("CONFORMANCE_TOKEN", "")
    if not token:
        sys.exit("conformance_shim.py: set CONFORMANCE_TOKEN to a token of serve's tokens file")
    host, port = sys.argv[1].rsplit(":", 1)
    Shim.upstream = (host, int(port))
    Shim.token = token
    server = ThreadingHTTPServer(("127.0.0.1", 0), Shim)
    server.daemon_threads = True
    print("listening on http://127.0.0.1:%d" % server.server_address[1], flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
