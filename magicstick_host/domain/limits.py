"""Every tunable number of the product, in one place (operations.md: "keep them in one place")."""

from __future__ import annotations

from magicstick_host.lite_dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    # intake
    request_max_age_s: float = 300.0
    request_max_future_s: float = 30.0
    processed_request_ids_kept: int = 4096
    # power
    shutdown_delay_min: int = 1
    reboot_observe_deadline_s: float = 600.0
    # prepare-gpu
    driver_ready_deadline_s: float = 300.0
    registration_deadline_s: float = 900.0
    gpu_publisher_timeout_s: float = 90.0
    playbook_timeout_s: float = 1800.0
    # how long a preparation waits for another package manager run (unattended-upgrades, an
    # administrator's apt) to finish before it fails, nothing installed
    package_manager_wait_s: float = 1800.0
    # configure-gpu-memory
    companion_driver_deadline_s: float = 600.0
    system_reserve_mi: int = 16384
    step_mi: int = 1024
    min_dynamic_limit_mi: int = 1024
    # report
    report_max_chars: int = 32768
    report_min_interval_s: float = 60.0
    # kubernetes calls: each ends within its timeout and what remains of its budgets
    kube_timeout_s: float = 10.0
    # all Kubernetes I/O of one tick (a playbook's report heartbeats aside)
    kube_tick_budget_s: float = 30.0
    # its share for the reads before the local step, so the step never waits long on them
    kube_read_budget_s: float = 10.0
    # each report heartbeat while a playbook holds the lock, on its own budget
    kube_heartbeat_budget_s: float = 10.0
    # clear-model-cache (model-cache.md): a walk of both cache roots gives up beyond these
    model_cache_max_inodes: int = 100_000
    model_cache_walk_time_s: float = 20.0
    # the cached inventory: walked again at the latest after this long ...
    model_cache_rewalk_s: float = 300.0
    # ... and, when the cheap change check sees a change, no sooner than this after the last walk
    model_cache_min_walk_interval_s: float = 60.0
    # the unconsumed network request Secrets (10 minutes old) are looked for this often, so a
    # forgotten password is gone 10 to 15 minutes after it was sent, at 12 LISTs an hour
    network_secret_sweep_interval_s: float = 300.0


DEFAULT_LIMITS = Limits()
