"""The floor `make bench` compares the tick with: a minimal Python process that reads the
kubeconfig and makes the same two HTTPS requests as an idle tick (GET Node, GET HostOperation),
with nothing else. Run as a fresh process: `python tests/bench_floor.py KUBECONFIG NODE NAME`.

It trusts the kubeconfig's CA alone, as the worker does: `ssl.create_default_context()` would
also load the system's CA store (10-20 ms here) that neither needs."""

from __future__ import annotations

import base64
import http.client
import json
import ssl
import sys
import tempfile
from urllib.parse import urlsplit

import yaml


def main(kubeconfig: str, node: str, hostop: str) -> int:
    with open(kubeconfig, encoding="utf-8") as handle:
        config = yaml.safe_load(handle)
    cluster = config["clusters"][0]["cluster"]
    user = config["users"][0]["user"]
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    if "certificate-authority-data" in cluster:
        context.load_verify_locations(
            cadata=base64.b64decode(cluster["certificate-authority-data"]).decode()
        )
    else:
        context.load_verify_locations(cafile=cluster["certificate-authority"])
    headers = {"Accept": "application/json"}
    if "token" in user:
        headers["Authorization"] = f"Bearer {user['token']}"
    else:  # a client certificate, as in K3s's admin kubeconfig
        with tempfile.NamedTemporaryFile("wb") as cert, tempfile.NamedTemporaryFile("wb") as key:
            cert.write(base64.b64decode(user["client-certificate-data"]))
            key.write(base64.b64decode(user["client-key-data"]))
            cert.flush()
            key.flush()
            context.load_cert_chain(cert.name, key.name)
    url = urlsplit(cluster["server"])
    conn = http.client.HTTPSConnection(url.hostname or "", url.port, context=context, timeout=10)
    paths = (
        f"/api/v1/nodes/{node}",
        f"/apis/appliance.magicstick.dev/v1alpha1/namespaces/ai-system/hostoperations/{hostop}",
    )
    for path in paths:
        conn.request("GET", path, headers=headers)
        response = conn.getresponse()
        json.loads(response.read() or b"{}")
    conn.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
