"""A small OpenID Connect issuer for tests (stdlib only), HTTPS on 127.0.0.1: the two endpoints the
kubernetes client's ``oidc`` auth-provider uses to refresh an expired id-token
(``/.well-known/openid-configuration`` and its ``token_endpoint``, grant_type=refresh_token)."""
import base64
import json
import ssl
import time
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs

from fakeapi.server import LocalServer


def _b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def make_jwt(claims):
    """An unsigned JWT the client can parse (it reads ``exp`` and never checks the signature). The
    client rejects payloads whose base64 length would need 3 padding characters: pad the claims."""
    for pad in range(4):
        payload = _b64(json.dumps(dict(claims, pad="x" * pad)).encode())
        if len(payload) % 4 != 1:
            return "%s.%s.%s" % (_b64(b'{"alg":"none","typ":"JWT"}'), payload, _b64(b"sig"))
    raise AssertionError("unreachable")


class OidcIssuer(LocalServer):
    def __init__(self, cert, key, client_id, client_secret, refresh_token, on_issue=None):
        """on_issue(id_token): called with each id-token issued (give it to the fake API's tokens)."""
        self.cert, self.key = cert, key
        self.client_id, self.client_secret = client_id, client_secret
        self.refresh_tokens = {refresh_token}   # every one handed out stays valid (no rotation checks)
        self.on_issue = on_issue
        self.issued = []     # [(id_token, refresh_token)]
        self.requests = []   # [(method, path)]

    @property
    def url(self):
        return "https://127.0.0.1:%d" % self.httpd.server_address[1]

    def handler_class(self):
        return type("OidcHandler", (_OidcHandler,), {"issuer": self})

    def tls_context(self):
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.cert, self.key)
        return context

    def refresh(self, form, authorization):
        expected = "Basic " + base64.b64encode(("%s:%s" % (self.client_id, self.client_secret)).encode()).decode()
        if authorization != expected:
            return 401, {"error": "invalid_client"}
        if form.get("grant_type") != ["refresh_token"] or (form.get("refresh_token") or [None])[0] not in self.refresh_tokens:
            return 400, {"error": "invalid_grant"}
        number = len(self.issued) + 1
        id_token = make_jwt({"iss": self.url, "sub": "oidc-user", "exp": int(time.time()) + 3600, "n": number})
        refresh_token = "refresh-%d" % number
        self.refresh_tokens.add(refresh_token)
        self.issued.append((id_token, refresh_token))
        if self.on_issue:
            self.on_issue(id_token)
        return 200, {"access_token": "access-%d" % number, "token_type": "Bearer", "expires_in": 3600,
                     "id_token": id_token, "refresh_token": refresh_token}


class _OidcHandler(BaseHTTPRequestHandler):
    issuer = None
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):  # quiet
        pass

    def _answer(self, status, data):
        out = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def do_GET(self):  # noqa: N802
        self.issuer.requests.append(("GET", self.path))
        if self.path == "/.well-known/openid-configuration":
            self._answer(200, {"issuer": self.issuer.url, "token_endpoint": self.issuer.url + "/token"})
        else:
            self._answer(404, {"error": "not found"})

    def do_POST(self):  # noqa: N802
        self.issuer.requests.append(("POST", self.path))
        length = int(self.headers.get("Content-Length") or 0)
        form = parse_qs(self.rfile.read(length).decode() if length else "")
        if self.path != "/token":
            self._answer(404, {"error": "not found"})
            return
        self._answer(*self.issuer.refresh(form, self.headers.get("Authorization")))
