"""The soak's invariants, checked after every tick from what the host and the apiserver show.

`HostLedger` is one host's memory across ticks (requests asked for, restarts used, terminal
phases seen, transitions to find in the journal); `check_tick` compares one `Observation` with it
and returns the violations. Everything here is pure: the unit tests feed it bad effects logs,
journals, states and exit codes and assert that each is reported.

The rules (issue 10, item 8):
- restarts: at most the action's budget of shutdowns per request;
- effects: every effect on the host belongs to an accepted request of an action that has such a
  step, has a saved intent of this boot, and no step ran more often than it has intents;
- terminal stays terminal: in the local state and in the HostOperation status, and both agree;
- the state loads (the worker's own `status --json` shows no state error) or is a documented
  block; no block says the state was corrupt (nobody but the worker writes it here);
- the journal has every transition of the local operation seen at a tick's end, and every
  rejection (checked after each tick that loaded the state, so a repair on the next load
  counts); within the journal, no request leaves a terminal phase;
- exit codes: never 70, only documented ones; a tick never runs over its bound;
- issue #24: no hostile tool process (sim/faults.py) outlives a tick that was not SIGKILLed;
  a tick's peak RSS (wait4) stays within RSS_BOUND_BYTES; the host's decoy listener (the server
  of a planted memo) never receives a byte nor a connection; a local step that is due (an
  operation waiting for a boot that has happened) runs in a tick that loads the state, whatever
  Kubernetes answered; a HostOperation status message or block message is at most
  MAX_MESSAGE code points (a 2 kB state path quoted in it is clipped).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from magicstick_host.domain.phase import SHUTDOWN_PHASES, TERMINAL_PHASES
from magicstick_host.domain.state import Operation, State
from magicstick_host.domain.text import MAX_MESSAGE
from tests.soak.actions import BY_NAME, effect_steps

Json = dict[str, Any]
Finding = tuple[str, str]  # (rule, evidence)

# what the worker may exit with (errors.py): ok, state blocked, Kubernetes unavailable, effect
# failed, busy, waiting. 3 (bad input) never fits: the soak passes only valid input.
TICK_EXIT_CODES = frozenset({0, 4, 5, 6, 75, 76})
# exits after which the tick has loaded (and repaired) the state
LOADED_EXIT_CODES = frozenset({0, 5, 6})
STATUS_EXIT_CODES = frozenset({0, 4})
DOCUMENTED_BLOCKS = frozenset({"execution-state-removed", "state-corrupt"})
KILLED = -9
SIM_CRASH_EXIT = 1  # the simulator's SimulatedCrash escaped: the process "died" mid-playbook
SIM_CRASH_FAULT = "apt-crash-halfway"
RSS_BOUND_BYTES = 200 * 1024 * 1024  # a tick's peak RSS (issue #24, as tests/hostile/checks.py)

# the step each kind of effect on the host is the effect of (the action table's `effects`)
EFFECT_STEPS = effect_steps()


@dataclass(frozen=True)
class Violation:
    host: str
    tick: int
    rule: str
    evidence: str

    def __str__(self) -> str:
        return f"VIOLATION host {self.host} tick {self.tick}: {self.rule}: {self.evidence}"


@dataclass(frozen=True)
class TickRun:
    exit_code: int  # KILLED for a SIGKILL
    wall_s: float
    stderr: str = ""
    killed: bool = False
    over_bound: bool = False  # the soak had to kill it at the hard limit
    peak_rss_bytes: int = 0  # ru_maxrss of the tick's process (os.wait4), 0 if unmeasured


@dataclass
class Observation:
    tick: int
    run: TickRun
    state: State | None
    state_error: str  # why state.json could not be read back ("" when it could)
    journal: list[Json]
    effects: list[Json]  # the effects of this tick (new lines of the effects log, + sysfs)
    shutdown_appeared: bool  # host.json gained a scheduled shutdown during the tick
    hostop: Json | None  # the HostOperation as the apiserver has it now
    status_exit: int
    status_doc: Json | None
    status_stderr: str = ""
    # hostile tool processes alive after the tick ('pid argv'; not looked for after a kill)
    leftover_processes: list[str] = field(default_factory=list)
    decoy_received: tuple[int, int] = (0, 0)  # connections, bytes during this tick
    # the operation of the state before the tick when it was waiting for a boot, and the
    # host's boot ID when the tick ran
    awaiting_boot: Operation | None = None
    boot_id: str = ""


@dataclass
class HostLedger:
    host: str
    bound_s: float
    asked: dict[str, str] = field(default_factory=dict)  # requestId -> action
    restarts: Counter[str] = field(default_factory=Counter)  # requestId -> shutdowns
    effects_by_step: dict[str, Counter[str]] = field(default_factory=dict)
    local_terminal: dict[str, str] = field(default_factory=dict)  # request uid -> phase
    api_terminal: dict[str, str] = field(default_factory=dict)  # HostOperation uid -> phase
    transitions: set[tuple[str, str]] = field(default_factory=set)  # (requestId, phase)
    accepted_ops: set[str] = field(default_factory=set)  # requestIds
    journal_reported: set[tuple[str, str]] = field(default_factory=set)

    def forget_hostop(self, uid: str) -> None:
        """The dashboard deleted this (terminal) HostOperation to replace it."""
        self.api_terminal.pop(uid, None)


def effect_key(effect: Json) -> str:
    kind = str(effect.get("effect"))
    return f"playbook:{effect.get('playbook')}" if kind == "playbook" else kind


def check_tick(ledger: HostLedger, obs: Observation) -> list[Violation]:
    found: list[Finding] = []
    found += _exit_code(ledger, obs)
    found += _state_loads(obs)
    found += _effects(ledger, obs)
    found += _terminal(ledger, obs)
    found += _journal(ledger, obs)
    found += _hostile(obs)
    return [Violation(ledger.host, obs.tick, rule, evidence) for rule, evidence in found]


def _exit_code(ledger: HostLedger, obs: Observation) -> list[Finding]:
    run = obs.run
    out = []
    if run.over_bound or run.wall_s > ledger.bound_s:
        out.append(("tick over its bound", f"{run.wall_s:.1f} s > {ledger.bound_s:.0f} s"))
    died = run.killed or (run.exit_code == SIM_CRASH_EXIT and _sim_crash(obs))
    stderr = run.stderr.strip()[-600:]
    if run.exit_code == 70:
        out.append(("exit code 70", stderr))
    elif not died and run.exit_code not in TICK_EXIT_CODES:
        out.append(("undocumented tick exit code", f"{run.exit_code}: {stderr}"))
    if "Traceback" in run.stderr and not _sim_crash(obs):
        out.append(("traceback on stderr", stderr))
    return out


def _sim_crash(obs: Observation) -> bool:
    return "SimulatedCrash" in obs.run.stderr and any(
        e.get("effect") == "fault" and e.get("fault") == SIM_CRASH_FAULT for e in obs.effects
    )


def _state_loads(obs: Observation) -> list[Finding]:
    out = []
    if obs.state_error:
        out.append(("state does not load", obs.state_error))
    doc = obs.status_doc
    if obs.status_exit not in STATUS_EXIT_CODES or doc is None:
        out.append(("status --json failed", f"exit {obs.status_exit}: {obs.status_stderr[-600:]}"))
        return out
    if doc.get("stateError"):
        out.append(("status shows a state error", str(doc["stateError"])))
    block = doc.get("block")
    if isinstance(block, dict):
        code = block.get("code")
        if code not in DOCUMENTED_BLOCKS:
            out.append(("undocumented block", str(block)))
        elif code == "state-corrupt":
            out.append(("state corrupt although only the worker writes it", str(block)))
    return out


def _effects(ledger: HostLedger, obs: Observation) -> list[Finding]:
    out: list[Finding] = []
    op = obs.state.operation if obs.state else None
    processed = {p.request_uid: p.phase for p in obs.state.processed} if obs.state else {}
    unexplained = "effect without an accepted request"
    for effect in obs.effects:
        key = effect_key(effect)
        if key not in EFFECT_STEPS:
            out.append(("unknown effect on the host", str(effect)))
            continue
        step = EFFECT_STEPS[key]
        if step is None:
            continue
        # an effect several steps run (netplan apply: the trial's apply and its restore) is
        # counted by its kind against the intents of all of them
        steps = (step,) if isinstance(step, str) else step
        counted = step if isinstance(step, str) else key
        if op is None:
            out.append((unexplained, f"{key} {effect} (no operation)"))
            continue
        rid = op.request_id
        action = BY_NAME.get(op.action)
        if rid not in ledger.asked:
            out.append((unexplained, f"{key} for {rid}, never asked for"))
        if processed.get(op.request_uid) == "Rejected":
            out.append(("effect of a rejected request", f"{key} for {rid}"))
        if action is None or not set(steps) <= action.steps:
            out.append(("effect foreign to the action", f"{key} during {op.action} {rid}"))
        intents = [s for s in op.steps if s.name in steps]
        if not any(s.boot_id == effect.get("bootId") for s in intents):
            out.append(("effect without a saved intent of this boot",
                        f"{key} boot {effect.get('bootId')} for {rid}; intents of boots "
                        f"{[s.boot_id for s in intents]}"))
        used = ledger.effects_by_step.setdefault(rid, Counter())
        used[counted] += 1
        if used[counted] > len(intents):
            out.append(("step replayed", f"{counted} ran {used[counted]} times for {rid}, "
                        f"{len(intents)} intents of {'/'.join(steps)}"))
        if key == "shutdown":
            ledger.restarts[rid] += 1
    if obs.shutdown_appeared and op is not None and not any(
            effect_key(e) == "shutdown" for e in obs.effects):
        ledger.restarts[op.request_id] += 1  # scheduled, though the log missed it
    if obs.shutdown_appeared and op is None:
        out.append((unexplained, "a shutdown was scheduled with no operation in the state"))
    if op is not None:
        budget = BY_NAME[op.action].restart_budget if op.action in BY_NAME else 0
        used_restarts = ledger.restarts[op.request_id]
        if used_restarts > budget:
            out.append(("restart budget exceeded", f"{used_restarts} restarts for {op.action} "
                        f"{op.request_id}, budget {budget}"))
    return out


def _terminal(ledger: HostLedger, obs: Observation) -> list[Finding]:
    out = []
    seen: list[tuple[str, str, str]] = []  # (uid, phase, where)
    if obs.state is not None:
        op = obs.state.operation
        if op is not None and op.terminal:
            seen.append((op.request_uid, op.phase, f"local operation {op.request_id}"))
        seen += [(p.request_uid, p.phase, f"processed {p.request_id}")
                 for p in obs.state.processed if p.phase in TERMINAL_PHASES]
    for uid, phase, where in seen:
        first = ledger.local_terminal.setdefault(uid, phase)
        if first != phase:
            out.append(("terminal phase changed locally", f"{where} was {first}, now {phase}"))
    if obs.hostop is not None:
        uid = str(obs.hostop.get("metadata", {}).get("uid", ""))
        phase = str((obs.hostop.get("status") or {}).get("phase", ""))
        if phase in TERMINAL_PHASES:
            first = ledger.api_terminal.setdefault(uid, phase)
            if first != phase:
                out.append(("terminal phase changed in the HostOperation status",
                            f"{uid} was {first}, now {phase}"))
            local = ledger.local_terminal.get(uid)
            if local is not None and local != phase:
                out.append(("HostOperation status disagrees with the local terminal phase",
                            f"{uid}: status {phase}, local {local}"))
    return out


def _journal(ledger: HostLedger, obs: Observation) -> list[Finding]:
    op = obs.state.operation if obs.state else None
    if op is not None:
        ledger.transitions.add((op.request_id, op.phase))
        ledger.accepted_ops.add(op.request_id)
    if obs.state is not None:  # a rejection is a transition of the rejected request
        ledger.transitions |= {(p.request_id, p.phase) for p in obs.state.processed
                               if p.phase == "Rejected"}
    if obs.run.killed or obs.run.exit_code not in LOADED_EXIT_CODES:
        return []  # a kill may leave the last entry to the next load's repair
    out = []
    have = {(str(e.get("requestId")), str(e.get("phase"))) for e in obs.journal}
    accepted = {str(e.get("requestId")) for e in obs.journal if e.get("event") == "accepted"}
    missing = sorted(t for t in ledger.transitions - have if t not in ledger.journal_reported)
    for rid, phase in missing:
        ledger.journal_reported.add((rid, phase))
        out.append(("journal incomplete", f"no entry for {rid} in phase {phase}"))
    for rid in sorted(ledger.accepted_ops - accepted):
        if (rid, "accepted") not in ledger.journal_reported:
            ledger.journal_reported.add((rid, "accepted"))
            out.append(("journal incomplete", f"no 'accepted' entry for {rid}"))
    out += _journal_terminal(obs.journal, ledger)
    return out


def _journal_terminal(journal: list[Json], ledger: HostLedger) -> list[Finding]:
    """Within the journal, a request's entries never leave its first terminal phase."""
    out = []
    first: dict[str, str] = {}
    for entry in journal:
        rid, phase = str(entry.get("requestId") or ""), str(entry.get("phase") or "")
        if not rid or not phase:
            continue
        if rid in first and phase != first[rid]:
            key = (rid, f"after {first[rid]}: {phase}")
            if key not in ledger.journal_reported:
                ledger.journal_reported.add(key)
                out.append(("journal leaves a terminal phase",
                            f"{rid} went from {first[rid]} to {phase}"))
        elif phase in TERMINAL_PHASES:
            first.setdefault(rid, phase)
    return out


def local_step_due(op: Operation | None, boot_id: str) -> bool:
    """The operation waits for a shutdown, and the host has booted since it was scheduled: the
    next tick completes it from local evidence alone (the new boot ID)."""
    return op is not None and op.phase in SHUTDOWN_PHASES and op.phase_boot_id != boot_id


def _hostile(obs: Observation) -> list[Finding]:
    out: list[Finding] = []
    run = obs.run
    if obs.leftover_processes and not run.killed:
        out.append(("a hostile tool process outlived its tick",
                    "; ".join(obs.leftover_processes[:5])))
    if run.peak_rss_bytes > RSS_BOUND_BYTES:
        out.append(("tick peak RSS over its bound", f"{run.peak_rss_bytes / 2**20:.0f} MiB > "
                    f"{RSS_BOUND_BYTES / 2**20:.0f} MiB"))
    connections, received = obs.decoy_received
    if connections or received:
        out.append(("the decoy server of a planted memo was contacted",
                    f"{connections} connection(s), {received} bytes"))
    due = obs.awaiting_boot
    if due is not None and local_step_due(due, obs.boot_id) and not run.killed \
            and run.exit_code in LOADED_EXIT_CODES:
        after = obs.state.operation if obs.state is not None else None
        if after is not None and after.request_id == due.request_id \
                and after.phase == due.phase and local_step_due(after, obs.boot_id):
            out.append(("the due local step did not run",
                        f"{due.action} {due.request_id} still {after.phase} of boot "
                        f"{after.phase_boot_id} on boot {obs.boot_id} after an exit "
                        f"{run.exit_code}"))
    messages = [("HostOperation status.message",
                 (obs.hostop or {}).get("status", {}) if isinstance(
                     (obs.hostop or {}).get("status"), dict) else {})]
    block = (obs.status_doc or {}).get("block")
    if isinstance(block, dict):
        messages.append(("the block's message", block))
    for where, doc in messages:
        text = doc.get("message")
        if isinstance(text, str) and len(text) > MAX_MESSAGE:
            out.append(("message not clipped", f"{where}: {len(text)} code points > "
                        f"{MAX_MESSAGE}: {text[:200]}"))
    return out
