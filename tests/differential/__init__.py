"""The parts of our own that stand in for a standard part, held to the original (issue #26):
the lean kubeconfig reader to the official client's loader, lite_dataclasses to dataclasses,
the compiled schemas to jsonschema. (The lean transport reads its answers with http.client
itself: tests/ports/test_kube_http_answers.py.)
Each file lists the divergences that stay, with the reason."""
