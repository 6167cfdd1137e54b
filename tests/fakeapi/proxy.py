"""A small HTTP proxy for tests (stdlib only), on 127.0.0.1: forwards absolute-URI requests (what a
client sends to a proxy for http:// targets) and tunnels CONNECT (https:// targets), and logs what it
was asked, with the headers the proxy itself received (Proxy-Authorization, User-Agent, ...)."""
import http.client
import select
import socket
from http.server import BaseHTTPRequestHandler
from urllib.parse import urlsplit

from fakeapi.server import LocalServer

HOP_BY_HOP = ("connection", "keep-alive", "proxy-authorization", "proxy-connection", "te", "trailer",
              "transfer-encoding", "upgrade")


class ForwardProxy(LocalServer):
    def __init__(self):
        self.log = []   # [{"method", "target", "headers": {lower-case name: [values]}}]

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.httpd.server_address[1]

    def handler_class(self):
        return type("ProxyHandler", (_ProxyHandler,), {"proxy": self})


class _ProxyHandler(BaseHTTPRequestHandler):
    proxy = None
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):  # quiet
        pass

    def _record(self):
        headers = {}
        for name, value in self.headers.items():
            headers.setdefault(name.lower(), []).append(value)
        self.proxy.log.append({"method": self.command, "target": self.path, "headers": headers})

    def _forward(self):
        self._record()
        target = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        headers = dict((k, v) for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP)
        conn = http.client.HTTPConnection(target.hostname, target.port or 80, timeout=30)
        try:
            path = target.path + ("?" + target.query if target.query else "")
            conn.request(self.command, path, body=body, headers=headers)
            response = conn.getresponse()
            data = response.read()
        finally:
            conn.close()
        self.send_response(response.status)
        for name, value in response.getheaders():
            if name.lower() not in HOP_BY_HOP and name.lower() != "content-length":
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _forward

    def do_CONNECT(self):  # noqa: N802 - the HTTP method's name
        self._record()
        host, _sep, port = self.path.rpartition(":")
        try:
            upstream = socket.create_connection((host, int(port)), timeout=30)
        except OSError:
            self.send_error(502)
            return
        self.send_response(200, "Connection established")
        self.end_headers()
        self.close_connection = True
        sockets = [self.connection, upstream]
        try:
            while True:
                readable, _w, _x = select.select(sockets, [], [], 30)
                if not readable:
                    return
                for sock in readable:
                    data = sock.recv(65536)
                    if not data:
                        return
                    (upstream if sock is self.connection else self.connection).sendall(data)
        finally:
            upstream.close()
