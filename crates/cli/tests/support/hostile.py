"""Hostile peers for the client's tests, Python stdlib only. Each binds 127.0.0.1:0, prints its
port on the first stdout line, appends one line per request or tunnel to LOG, and serves until
it is killed.

  hostile.py echo STATUS KIND LOG      a plugin_tool "server" answering STATUS to every POST,
                                       echoing the Authorization header it received in its
                                       body (KIND: success, failure or empty) and headers
  hostile.py runner KIND LOG           a runner's `serve` whose `describe` of fx/echo is valid and
                                       whose `call` answers a success of KIND: token (the result
                                       holds the bearer token), token-escaped (the same, every
                                       character a \\u escape), invalid (a result that breaks the
                                       contract) or ok (a valid result)
  hostile.py socks MODE LOG            a SOCKS4/4a/5 proxy (no auth, CONNECT only) that relays
                                       (MODE relay) or refuses every CONNECT (MODE refuse)
  hostile.py refuse-connect STATUS LOG an HTTP proxy answering STATUS to every CONNECT
"""

import json
import socket
import struct
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def log(path, line):
    with open(path, "a", encoding="utf-8") as f:
        f.write(line + "\n")


def echo(status, kind, log_path):
    class Echo(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            request = self.rfile.read(length).decode("utf-8", "replace")
            auth = self.headers.get("Authorization", "")
            token = auth.split(" ", 1)[-1]
            log(log_path, "POST " + json.dumps(request))
            if kind == "success":
                body = {
                    "success": True,
                    "output": {
                        "providers": [
                            {"plugin": "fx", "status": "ready", "name": "you sent " + token}
                        ],
                        "echo": {token: auth},
                    },
                }
            elif kind == "failure":
                body = {
                    "success": False,
                    "output": {
                        "error": {
                            "code": "unauthorized",
                            "message": "the token " + token + " is unknown (" + auth + ")",
                        },
                        "dispatch": "not_started",
                    },
                }
            else:
                body = None
            data = b"" if body is None else json.dumps(body).encode()
            self.server_version = "echo " + auth
            self.sys_version = ""
            self.send_response(status)
            self.send_header("X-Echo", auth)
            self.send_header("Webcodex-Runner-Instance", token[:64])
            if 300 <= status < 400:
                self.send_header("Location", "http://127.0.0.1:9/moved?t=" + token)
            if status not in (204, 304):
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
            self.send_header("Connection", "close")
            self.end_headers()
            if status not in (204, 304):
                self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    print(server.server_address[1], flush=True)
    server.serve_forever()


DESCRIBED = {
    "binding": "wc_pbind_klBFXeoLlSNUioRIQKmULA",
    "plugin": "fx",
    "pluginName": "Fixture",
    "runner": "local",
    "tool": {
        "name": "echo",
        "description": "Returns the text.",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
    },
}


def runner(kind, log_path):
    class Runner(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            request = json.loads(self.rfile.read(length))
            token = self.headers.get("Authorization", "").split(" ", 1)[-1]
            params = request.get("params", {})
            log(log_path, "POST " + params.get("action", "?"))
            if params.get("action") == "describe":
                data = json.dumps({"success": True, "output": DESCRIBED}).encode()
            elif kind == "token-escaped":
                spelled = "".join("\\u%04x" % ord(c) for c in token)
                data = ('{"success":true,"output":{"content":[{"type":"text","text":"%s"}]}}'
                        % spelled).encode()
            else:
                text = {"token": "you sent " + token, "ok": "fine"}.get(kind, "x")
                result = {"content": [{"type": "text", "text": text}]}
                if kind == "invalid":
                    result["extra"] = True
                data = json.dumps({"success": True, "output": result}).encode()
            self.send_response(200)
            self.send_header("Webcodex-Runner-Instance", "hostile-runner-instance")
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Runner)
    print(server.server_address[1], flush=True)
    server.serve_forever()


def read_exact(conn, n):
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            raise ConnectionError("peer closed")
        data += chunk
    return data


def read_until_nul(conn):
    data = b""
    while True:
        c = read_exact(conn, 1)
        if c == b"\0":
            return data
        data += c


def pipe(src, dst):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    finally:
        try:
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def relay(conn, host, port):
    upstream = socket.create_connection((host, port), timeout=30)
    upstream.settimeout(None)
    threading.Thread(target=pipe, args=(upstream, conn), daemon=True).start()
    pipe(conn, upstream)


def socks_client(conn, mode, log_path):
    try:
        version = read_exact(conn, 1)[0]
        if version == 5:
            methods = read_exact(conn, read_exact(conn, 1)[0])
            if 0 not in methods:
                conn.sendall(b"\x05\xff")
                return
            conn.sendall(b"\x05\x00")
            _, command, _, atyp = read_exact(conn, 4)
            if atyp == 1:
                host = socket.inet_ntoa(read_exact(conn, 4))
            elif atyp == 3:
                host = read_exact(conn, read_exact(conn, 1)[0]).decode()
            else:
                host = socket.inet_ntop(socket.AF_INET6, read_exact(conn, 16))
            port = struct.unpack(">H", read_exact(conn, 2))[0]
            log(log_path, "socks5 %s CONNECT %s:%d" % (mode, host, port))
            if command != 1 or mode == "refuse":
                # 0x02: connection not allowed by ruleset.
                conn.sendall(b"\x05\x02\x00\x01\x00\x00\x00\x00\x00\x00")
                return
            conn.sendall(b"\x05\x00\x00\x01\x7f\x00\x00\x01\x00\x00")
            relay(conn, host, port)
        elif version == 4:
            command = read_exact(conn, 1)[0]
            port = struct.unpack(">H", read_exact(conn, 2))[0]
            ip = read_exact(conn, 4)
            read_until_nul(conn)
            if ip[:3] == b"\0\0\0" and ip[3] != 0:
                host = read_until_nul(conn).decode()
            else:
                host = socket.inet_ntoa(ip)
            log(log_path, "socks4 %s CONNECT %s:%d" % (mode, host, port))
            if command != 1 or mode == "refuse":
                conn.sendall(b"\x00\x5b" + b"\0" * 6)
                return
            conn.sendall(b"\x00\x5a" + b"\0" * 6)
            relay(conn, host, port)
    except (OSError, ConnectionError, IndexError, ValueError):
        pass
    finally:
        conn.close()


def refuse_connect_client(conn, status, log_path):
    try:
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = conn.recv(4096)
            if not chunk:
                return
            head += chunk
        log(log_path, head.split(b"\r\n", 1)[0].decode("latin-1"))
        conn.sendall(
            ("HTTP/1.1 %d Refused\r\nContent-Length: 0\r\nConnection: close\r\n\r\n" % status).encode()
        )
    except OSError:
        pass
    finally:
        conn.close()


def listen(handler, *args):
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    print(server.getsockname()[1], flush=True)
    while True:
        conn, _ = server.accept()
        conn.settimeout(30)
        threading.Thread(target=handler, args=(conn,) + args, daemon=True).start()


def main():
    what = sys.argv[1]
    if what == "echo":
        echo(int(sys.argv[2]), sys.argv[3], sys.argv[4])
    elif what == "runner":
        runner(sys.argv[2], sys.argv[3])
    elif what == "socks":
        listen(socks_client, sys.argv[2], sys.argv[3])
    elif what == "refuse-connect":
        listen(refuse_connect_client, int(sys.argv[2]), sys.argv[3])
    else:
        sys.exit("unknown peer " + what)


if __name__ == "__main__":
    main()
