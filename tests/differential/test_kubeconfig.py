"""ports/kubeconfig.py against the official client's loader (kubernetes.config.kube_config) on
generated kubeconfigs: contexts, users with a token, a token file, a client certificate (data or
files), exec and auth-provider plugins, username/password; clusters with CA data (plain, wrapped
at 64 or 76 columns, CRLF, unpadded, URL-safe) or a CA file, insecure-skip-tls-verify,
tls-server-name, proxy-url; namespaces; a missing or dangling current-context; YAML anchors and
duplicate keys.

A kubeconfig the lean reader serves (official_only empty) gives the lean transport what the
official loader gives the official client: the server, the CA, the client certificate and key,
verify or not, the TLS server name, the bearer token. One it hands on (official_only) goes to
the official client. One it refuses, the official loader refuses too, but for the divergences
below, each where the lean reader does what kubectl (client-go) does and the Python client does
not:
- CA or client data that is not Go's padded standard base64 (line breaks aside): kubectl
  refuses it; the Python client skips any character outside the alphabet;
- insecure-skip-tls-verify that is not a boolean (the string "false"): kubectl refuses it; the
  Python client takes its truth value, and "false" turns verification off;
- a client certificate without its key (or the reverse): kubectl refuses it.
And where both read it, the lean reader keeps kubectl's reading in two places: a tokenFile's
content without its surrounding blanks (the Python client keeps the line break), and an empty
`certificate-authority-data` next to a `certificate-authority` file reads the file (the Python
client then trusts neither).
"""

from __future__ import annotations

import base64
import os
import tempfile
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kubernetes.client import Configuration
from kubernetes.config.config_exception import ConfigException
from kubernetes.config.kube_config import KubeConfigLoader

from magicstick_host.errors import KubeConfigError
from magicstick_host.ports.kubeconfig import KubeConfig, load_kubeconfig

PEM = ("-----BEGIN CERTIFICATE-----\n" + "MIIB" + "A" * 200 + "\n-----END CERTIFICATE-----\n")
KEY = "-----BEGIN PRIVATE KEY-----\nMIIE" + "B" * 100 + "\n-----END PRIVATE KEY-----\n"


def encoded(text: str, how: str) -> str:
    plain = base64.b64encode(text.encode()).decode()
    if how == "wrap64":
        return "\n".join(plain[i:i + 64] for i in range(0, len(plain), 64))
    if how == "wrap76":
        return "\r\n".join(plain[i:i + 76] for i in range(0, len(plain), 76)) + "\r\n"
    if how == "unpadded":
        return plain.rstrip("=")
    if how == "spaces":
        return " ".join(plain[i:i + 64] for i in range(0, len(plain), 64))
    return plain


B64 = st.sampled_from(["plain", "plain", "wrap64", "wrap76", "unpadded", "spaces"])


@st.composite
def cluster(draw: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"server": draw(st.sampled_from([
        "https://10.0.0.1:6443", "https://k3s.local:6443/", "https://[::1]:6443",
        "https://proxy.example/k8s/", "https://h"]))}
    ca = draw(st.sampled_from(["data", "file", "none", "both", "empty-data"]))
    if ca in ("data", "both"):
        body["certificate-authority-data"] = encoded(PEM + draw(st.sampled_from(["", "x"])),
                                                     draw(B64))
    if ca in ("file", "both", "empty-data"):
        body["certificate-authority"] = "ca.crt"
    if ca == "empty-data":
        body["certificate-authority-data"] = ""
    if draw(st.booleans()):
        body["insecure-skip-tls-verify"] = draw(st.sampled_from([True, False, "false"]))
    if draw(st.booleans()):
        body["tls-server-name"] = draw(st.sampled_from(["kubernetes", "k3s.local"]))
    if draw(st.integers(0, 5)) == 0:
        body["proxy-url"] = "http://proxy:3128"
    return body


@st.composite
def user(draw: Any) -> dict[str, Any]:
    body: dict[str, Any] = {}
    for kind in draw(st.sets(st.sampled_from(
            ["token", "tokenFile", "cert-data", "cert-file", "key-only", "exec", "auth-provider",
             "basic"]), max_size=2)):
        if kind == "token":
            body["token"] = draw(st.sampled_from(["abc.def", "K10abc::server:xyz"]))
        elif kind == "tokenFile":
            body["tokenFile"] = "token"
        elif kind == "cert-data":
            body["client-certificate-data"] = encoded(PEM, draw(B64))
            body["client-key-data"] = encoded(KEY, draw(B64))
        elif kind == "cert-file":
            body["client-certificate"] = "client.crt"
            body["client-key"] = "client.key"
        elif kind == "key-only":
            body["client-key-data"] = encoded(KEY, "plain")
        elif kind == "exec":
            body["exec"] = {"apiVersion": "client.authentication.k8s.io/v1", "command": "false"}
        elif kind == "auth-provider":
            body["auth-provider"] = {"name": "oidc", "config": {}}
        else:
            body["username"], body["password"] = "u", "p"
    return body


@st.composite
def kubeconfigs(draw: Any) -> str:
    names = ["default", "other"]
    doc: dict[str, Any] = {
        "apiVersion": "v1", "kind": "Config", "preferences": {},
        "clusters": [{"name": n, "cluster": draw(cluster())} for n in names],
        "users": [{"name": n, "user": draw(user())} for n in names],
        "contexts": [{"name": n, "context": {"cluster": n, "user": n,
                                              **({"namespace": "kube-system"}
                                                 if draw(st.booleans()) else {})}}
                     for n in names],
    }
    current = draw(st.sampled_from(["default", "other", "missing-key", "dangling"]))
    if current != "missing-key":
        doc["current-context"] = "gone" if current == "dangling" else current
    text = yaml.safe_dump(doc, sort_keys=draw(st.booleans()))
    how = draw(st.sampled_from(["", "", "anchors", "duplicate"]))
    if how == "anchors":  # the second cluster and user refer to the first ones
        doc["clusters"][1]["cluster"] = doc["clusters"][0]["cluster"]
        doc["users"][1]["user"] = doc["users"][0]["user"]
        text = yaml.dump(doc, Dumper=yaml.SafeDumper)  # the shared objects become &id001 / *id001
    elif how == "duplicate":  # a second current-context: both YAML parsers keep the last
        text += "current-context: other\n"
    return text


def official(path: str) -> Configuration:
    with open(path) as handle:
        doc = yaml.safe_load(handle)
    loader = KubeConfigLoader(config_dict=doc, config_base_path=os.path.dirname(path))
    configuration = Configuration()
    loader.load_and_set(configuration)
    return configuration


def content(name: str | None) -> bytes | None:
    if name is None:
        return None
    with open(name, "rb") as handle:
        return handle.read()


def check_same(lean: KubeConfig, theirs: Configuration, doc: dict[str, Any]) -> None:
    assert theirs.host == lean.server.rstrip("/")
    context = next(c["context"] for c in doc["contexts"] if c["name"] == doc["current-context"])
    cluster_body = next(c["cluster"] for c in doc["clusters"] if c["name"] == context["cluster"])
    user_body = next(u["user"] for u in doc["users"] if u["name"] == context["user"])
    ca = content(theirs.ssl_ca_cert)
    if cluster_body.get("certificate-authority-data") == "":
        assert ca is None  # kept: see the module's docstring
    else:
        assert ca == (lean.ca_pem.encode() if lean.ca_pem is not None else None)
    assert content(theirs.cert_file) == lean.client_cert_pem
    assert content(theirs.key_file) == lean.client_key_pem
    assert theirs.verify_ssl == (not lean.insecure)
    assert theirs.tls_server_name == lean.tls_server_name
    # the client's key for it: "BearerToken" since 36, "authorization" before (Debian's 35)
    bearer = theirs.api_key.get("BearerToken", theirs.api_key.get("authorization"))
    if "token" in user_body or bearer is None:
        assert bearer == (f"Bearer {lean.token}" if lean.token is not None else None)
    else:  # a tokenFile: kubectl trims it, the Python client does not
        assert bearer.strip() == f"Bearer {lean.token}"


def write_tree(directory: str, text: str) -> str:
    for name, data in (("ca.crt", PEM), ("client.crt", PEM), ("client.key", KEY),
                       ("token", "from-file.token\n")):
        with open(os.path.join(directory, name), "w") as handle:
            handle.write(data)
    path = os.path.join(directory, "config")
    with open(path, "w") as handle:
        handle.write(text)
    return path


def kubectl_refuses(doc: dict[str, Any]) -> bool:
    """The refusals where the lean reader does as kubectl does (the module's docstring)."""
    context = next((c["context"] for c in doc.get("contexts", [])
                    if c["name"] == doc.get("current-context")), None)
    if context is None:
        return False
    cluster_body = next(c["cluster"] for c in doc["clusters"] if c["name"] == context["cluster"])
    user_body = next(u["user"] for u in doc["users"] if u["name"] == context["user"])
    data = [cluster_body.get("certificate-authority-data"),
            user_body.get("client-certificate-data"), user_body.get("client-key-data")]
    not_go_base64 = any(isinstance(d, str) and d and (" " in d or len(
        d.replace("\r", "").replace("\n", "")) % 4) for d in data)
    half_pair = ("client-key-data" in user_body) != ("client-certificate-data" in user_body) \
        and "client-certificate" not in user_body
    return not_go_base64 or half_pair or not isinstance(
        cluster_body.get("insecure-skip-tls-verify", False), bool)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kubeconfigs())
def test_the_lean_reader_reads_what_the_official_loader_reads(text: str) -> None:
    with tempfile.TemporaryDirectory() as directory:
        path = write_tree(directory, text)
        doc = yaml.safe_load(text)
        try:
            lean: KubeConfig | None = load_kubeconfig(path)
        except KubeConfigError:
            lean = None
        try:
            theirs: Configuration | None = official(path)
        except (ConfigException, KeyError, ValueError, TypeError):
            theirs = None
        except Exception:  # the plugins run (exec: `false`) and fail in their own ways
            theirs = None
        if lean is None:
            assert theirs is None or kubectl_refuses(doc), "refused what the official reads"
        elif not lean.official_only:
            assert theirs is not None, "served what the official client refuses"
            check_same(lean, theirs, doc)


@pytest.mark.parametrize("how", ["wrap64", "wrap76"])
def test_ca_data_wrapped_in_lines_is_read_as_kubectl_reads_it(how: str) -> None:
    """Issue 26: certificate-authority-data wrapped at 64 columns was refused (exit 3)."""
    doc = {"apiVersion": "v1", "kind": "Config", "current-context": "c",
           "clusters": [{"name": "c", "cluster": {
               "server": "https://h:6443", "certificate-authority-data": encoded(PEM, how)}}],
           "users": [{"name": "c", "user": {"token": "t"}}],
           "contexts": [{"name": "c", "context": {"cluster": "c", "user": "c"}}]}
    with tempfile.TemporaryDirectory() as directory:
        path = write_tree(directory, yaml.safe_dump(doc))
        lean = load_kubeconfig(path)
        assert lean.ca_pem == PEM and not lean.official_only
        check_same(lean, official(path), doc)


def test_the_generated_kubeconfigs_reach_every_outcome() -> None:
    """Of a sample, the lean reader serves some, hands some on and refuses some."""
    seen: dict[str, int] = {"lean": 0, "official": 0, "refused": 0}

    @settings(max_examples=150, deadline=None, database=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow])
    @given(kubeconfigs())
    def count(text: str) -> None:
        with tempfile.TemporaryDirectory() as directory:
            try:
                lean = load_kubeconfig(write_tree(directory, text))
            except KubeConfigError:
                seen["refused"] += 1
                return
            seen["official" if lean.official_only else "lean"] += 1

    count()
    assert min(seen.values()) >= 10, seen
