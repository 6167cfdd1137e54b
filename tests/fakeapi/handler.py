"""The HTTP side of the fake API server: one request handler that reads the body and the peer's certificate, asks the
server for the answer and writes it as JSON; Die, raised by a test's hook, drops the connection and stops the
server."""
import json
import threading
from http.server import BaseHTTPRequestHandler


class Die(Exception):
    """Raised by a hook: the server drops this request's connection and stops (an API that dies)."""


class _Handler(BaseHTTPRequestHandler):
    api = None
    protocol_version = "HTTP/1.1"
    # headers and body go out in separate writes: without TCP_NODELAY each answer on a kept-alive connection waits
    # for the client's delayed ACK (40 ms), which a real API server (Go sets TCP_NODELAY) never does
    disable_nagle_algorithm = True

    def log_message(self, *args):  # quiet
        pass

    def _serve(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw.decode()) if raw else None
        except ValueError:
            body = None
        peer = None
        if hasattr(self.connection, "getpeercert"):
            try:
                peer = self.connection.getpeercert()
            except ValueError:
                peer = None
        try:
            status, data = self.api.handle(self.command, self.path, self.headers, body, peer)
        except Die:
            self.api.dead = True
            self.close_connection = True
            threading.Thread(target=self.api.stop, daemon=True).start()
            return
        out = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve
