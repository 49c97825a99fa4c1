"""A fresh self-signed certificate for 127.0.0.1 (the openssl command), for the tests'
API server and the benchmark server when they serve HTTPS."""

from __future__ import annotations

import ssl
import subprocess
from pathlib import Path


def self_signed(where: Path) -> tuple[ssl.SSLContext, Path]:
    """A server-side SSLContext and the certificate's path (what a kubeconfig trusts)."""
    key, cert = where / "key.pem", where / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
                    "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(str(cert), str(key))
    return ctx, cert
