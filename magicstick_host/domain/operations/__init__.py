"""The operations this worker runs, one module (or package) each, and the registry that lists
them (registry.py). The machinery they share: kind.py (what an operation module provides),
decide.py (the phase dispatch), lifecycle.py (the transitions of every operation and its
HostOperation status) and shutdown_steps.py (the orderly shutdown).

Adding an operation (README.md, "Adding an operation"): write its module, here, named after the
action, with an `OperationKind` (request fields and intake rules, when the report offers it,
the cluster objects it reads, its data record, its phase table, how it classifies an
interrupted step, its restart budget and its steps); add it to `OPERATIONS` in registry.py (and
take it out of NOT_YET_ACTIONS); give each new step an effect in effects/__init__.py; test it.
tests/domain/toy_operation.py is a complete example.
"""
