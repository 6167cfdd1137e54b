"""A test server's life: a ThreadingHTTPServer on 127.0.0.1 (an ephemeral port, TLS when asked) served from a
daemon thread, started and stopped by the test (the OIDC issuer and the forward proxy)."""
import threading
from http.server import ThreadingHTTPServer


class LocalServer:
    httpd = None
    thread = None

    def handler_class(self):
        """The BaseHTTPRequestHandler subclass that serves this server's requests."""
        raise NotImplementedError

    def tls_context(self):
        """An ssl.SSLContext to serve HTTPS with, or None for plain HTTP."""
        return None

    def start(self):
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self.handler_class())
        self.httpd.daemon_threads = True
        context = self.tls_context()
        if context is not None:
            self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()
        return self

    def stop(self):
        if self.httpd is not None:
            self.httpd.shutdown()
            self.httpd.server_close()
            self.thread.join(5)
            self.httpd = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
