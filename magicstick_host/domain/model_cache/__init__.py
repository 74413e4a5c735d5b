"""The model-cache capability's pure rules (model-cache.md): which caches may be cleared,
what they hold, what blocks clearing them and what a cleanup deletes.

- inventory.py: the allow-listed cache roots and their inventory;
- shared.py: Hugging Face's shared blob store, and which blobs only the deleted entries use;
- blockers.py: the workloads that block a cleanup;
- capability.py: the report's `modelCache` section, the facts the decisions see and the
  intake rules of clear-model-cache;
- cleanup.py: the clear-model-cache operation's decisions (its steps).

Each module is imported by its own name; this package imports none of them (an idle tick
loads only what it uses).
"""
