# Create a Namespace only if it is missing:
#   python3 -I -c "<this file>" KUBECONFIG NAMESPACE [--check]
#
# Run by the install role with the host's python3 and its python3-kubernetes (a dependency the
# role installs anyway), against the node's K3s admin kubeconfig. It prints one word: `present`
# (nothing done; an existing Namespace is never changed), `created`, or in check mode `absent`
# (it would be created). Any failure is one line on stderr and exit 1.
import sys


def main(argv):
    if len(argv) not in (2, 3) or (len(argv) == 3 and argv[2] != "--check"):
        print("usage: ensure_namespace KUBECONFIG NAMESPACE [--check]", file=sys.stderr)
        return 2
    kubeconfig, name = argv[0], argv[1]
    check = len(argv) == 3
    try:
        from kubernetes import client, config
        from kubernetes.client.exceptions import ApiException

        api = client.CoreV1Api(config.new_client_from_config(config_file=kubeconfig))
        try:
            api.read_namespace(name, _request_timeout=15)
            print("present")
            return 0
        except ApiException as exc:
            if exc.status != 404:
                raise
        if check:
            print("absent")
            return 0
        body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
        try:
            api.create_namespace(body, _request_timeout=15)
        except ApiException as exc:
            if exc.status != 409:  # created meanwhile by someone else: present
                raise
            print("present")
            return 0
        print("created")
        return 0
    except Exception as exc:  # one line, whatever failed: the kubeconfig, the network, the API
        detail = getattr(exc, "reason", None) or str(exc) or type(exc).__name__
        status = getattr(exc, "status", None)
        what = f"HTTP {status} {detail}" if status else f"{type(exc).__name__}: {detail}"
        print(f"cannot ensure Namespace {name} with {kubeconfig}: "
              + " ".join(str(what).split())[:300], file=sys.stderr)
        return 1


sys.exit(main(sys.argv[1:]))
