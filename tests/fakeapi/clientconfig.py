"""What a client of the fake API server needs: certificates (a CA, a server and a client certificate) and a
kubeconfig."""
import os
import subprocess

import yaml


def make_certs(directory):
    """A CA, a server cert for 127.0.0.1/localhost and a client cert (CN kubevol-admin), with openssl."""
    def sh(*argv):
        subprocess.run(argv, check=True, cwd=directory, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    os.makedirs(directory, exist_ok=True)
    sh("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=fake-kube-ca",
       "-keyout", "ca.key", "-out", "ca.crt")
    with open(os.path.join(directory, "san.cnf"), "w") as fh:
        fh.write("subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n")
    for name, cn, ext in (("server", "127.0.0.1", True), ("client", "kubevol-admin", False)):
        sh("openssl", "req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=" + cn,
           "-keyout", name + ".key", "-out", name + ".csr")
        argv = ["openssl", "x509", "-req", "-in", name + ".csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                "-CAcreateserial", "-days", "2", "-out", name + ".crt"]
        if ext:
            argv += ["-extfile", "san.cnf"]
        sh(*argv)
    return dict((n, os.path.join(directory, n)) for n in
                ("ca.crt", "ca.key", "server.crt", "server.key", "client.crt", "client.key"))


def write_kubeconfig(path, contexts, current=None):
    """contexts: {name: {"server": url, "token"|"username"+"password"|"client-certificate"+"client-key",
    "certificate-authority"?, "insecure-skip-tls-verify"?}}."""
    clusters, users, ctxs = [], [], []
    for name, spec in contexts.items():
        cluster = {"server": spec["server"]}
        for key in ("certificate-authority", "insecure-skip-tls-verify"):
            if key in spec:
                cluster[key] = spec[key]
        user = dict((k, v) for k, v in spec.items()
                    if k in ("token", "username", "password", "client-certificate", "client-key"))
        clusters.append({"name": name, "cluster": cluster})
        users.append({"name": name, "user": user})
        ctxs.append({"name": name, "context": {"cluster": name, "user": name}})
    config = {"apiVersion": "v1", "kind": "Config", "clusters": clusters, "users": users, "contexts": ctxs,
              "current-context": current or next(iter(contexts)), "preferences": {}}
    with open(path, "w") as fh:
        yaml.safe_dump(config, fh)
    return path
