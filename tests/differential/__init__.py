"""The parts of our own that stand in for a standard part, held to the original (issue #26):
the lean transport's response reader to http.client, the lean kubeconfig reader to the
official client's loader, lite_dataclasses to dataclasses, the compiled schemas to jsonschema.
Each file lists the divergences that stay, with the reason."""
