"""The contract suite against an administrator's own cluster (issue #27).

`make contract-live CONTEXT=<name> [KUBECONFIG=<file>]` runs `python -m tests.contract_live`:
suite.py says what a run does and touches, client.py how it reaches the cluster (one context,
guarded requests, impersonation), crd_check.py how an installed CRD is compared with the
shipped one. The cases are tests/contract/cases.py, shared with the pytest contract suite.
test_contract_live.py runs it in `make test` against the suite's own test apiserver dressed
as an administrator's cluster.
"""
