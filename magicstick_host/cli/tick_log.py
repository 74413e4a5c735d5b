"""What a tick logs: each of its events once, and each condition when it starts and when it
ends (domain/log_lines.py). The timer's ticks remember which conditions they last said in the
service's runtime directory (ports/log_memory.py); a tick at the console remembers nothing
and says every condition that holds."""

from __future__ import annotations

from magicstick_host.cli.journal import say
from magicstick_host.ports.log_memory import LogMemory
from magicstick_host.tick_result import TickResult


def log_tick(result: TickResult, memory: LogMemory) -> None:
    said = memory.load()
    holds = {line.key: line for line in result.conditions}
    for line in result.events:
        say(line.level, line.text)
    for key, line in holds.items():
        if said.get(key) is None or not memory.enabled:
            say(line.level, line.text)
    now = dict(said)
    now.update({key: line.text for key, line in holds.items() if key not in said})
    if result.complete:
        for key, text in said.items():
            if key not in holds:
                say("notice", f"no longer the case: {text}")
                del now[key]
    if now != said:
        memory.save(now)
