"""A test server's life: a ThreadingHTTPServer on 127.0.0.1 (an ephemeral port, TLS when asked) served from a
daemon thread, started and stopped by the test (the fake Kubernetes API, the OIDC issuer, the forward proxy)."""
import threading
from http.server import ThreadingHTTPServer


class LocalServer:
    httpd = None
    thread = None
    port = 0  # 0: an ephemeral port, kept once bound, so that a restart comes back on the same one
    _stop_lock = threading.Lock()  # a stop from the test and one from a handler thread must not interleave

    def handler_class(self):
        """The BaseHTTPRequestHandler subclass that serves this server's requests."""
        raise NotImplementedError

    def tls_context(self):
        """An ssl.SSLContext to serve HTTPS with, or None for plain HTTP."""
        return None

    def start(self):
        self.httpd = ThreadingHTTPServer(("127.0.0.1", self.port), self.handler_class())
        self.httpd.daemon_threads = True
        context = self.tls_context()
        if context is not None:
            self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()
        return self

    def stop(self):
        with self._stop_lock:
            if self.httpd is not None:
                self.httpd.shutdown()
                self.httpd.server_close()
                self.thread.join(5)
                self.httpd = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
