"""The hostile-input suite (issue #24, deliverable 2): the real tick against hostile inputs
generated from seeds.

    .venv/bin/pytest tests/hostile                        # the default seeds (part of make test)
    MAGICSTICK_HOSTILE_SEED=123 .venv/bin/pytest tests/hostile
    MAGICSTICK_HOSTILE_SEED=1,2,3 MAGICSTICK_HOSTILE_CASES=200 .venv/bin/pytest tests/hostile

Every case runs the installed `magicstick-host` as a subprocess (tick, status, inspect), on a
simulated host root (`--executor sim`) or, for the tools, an idle tick on this machine with
fake tools only (test_tools.py says why that is safe), against the real test apiserver through
the soak's TLS fault proxy extended with hostile answers and a request log (proxy.py).

Families, each one module:
1. test_cluster_objects.py: a HostOperation status and KubeAI Models nested 2,000-9,000 levels,
   with 20k-100k keys, or long strings, stored by the real apiserver;
2. test_answers.py: answer bodies `[` x 200000, deep values, 64 MiB, truncated, non-UTF-8, not
   an object, duplicate keys, wrong types;
3. test_answers.py: HTTP `HTTP/1.1 ²00`, `099`, no reason, `Content-Length: ¹`, negative and
   huge lengths, bad chunk sizes, a 1 MiB header line, 10k headers, closed mid-headers,
   endless 1xx, and an http:// kubeconfig;
4. test_tools.py: `ip`/`netplan` that flood, hang, fork a grandchild holding stdout, or die by
   a signal;
5. test_memos.py: a kubeconfig memo edited to another server, owned by nobody 0666, behind a
   symlinked or open runtime directory, or a symlink itself;
6. test_long_paths.py: a 2 kB state directory path with a corrupt state.json and a pending
   request.

After each tick (checks.py): a documented exit code, never 70; at most 30 s and 200 MB peak
RSS (os.wait4); the local step ran (the reboot completed from the new boot ID, in state.json
and the journal; for the tools the report still published; for a corrupt state the block); no
write sent twice (the proxy's log) and no effect twice (the simulator's effects log). A
failing case prints its seed, its index and the command that runs it alone.
"""
