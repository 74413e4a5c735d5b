"""The observer's reading of carve-out selections: a changed index is a worker effect; the
simulator re-rendering a file that a killed write left empty is not."""

from __future__ import annotations

from tests.soak.observe import carveout_writes

PATH = "sys/devices/pci0000:00/0000:c5:00.0/uma/carveout"


def test_a_changed_index_is_an_effect_and_an_unchanged_one_is_not() -> None:
    assert [e["to"] for e in carveout_writes({PATH: "0"}, {PATH: "9"}, "b")] == ["9"]
    assert carveout_writes({PATH: "3"}, {PATH: "3"}, "b") == []


def test_a_torn_write_is_an_effect_and_its_re_render_is_not() -> None:
    torn = carveout_writes({PATH: "0"}, {PATH: ""}, "b")
    assert [(e["from"], e["to"], e["bootId"]) for e in torn] == [("0", "", "b")]
    assert carveout_writes({PATH: ""}, {PATH: "0"}, "b") == []
