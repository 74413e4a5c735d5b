"""The network trial around its effects (network.md, "The trial"): what the configure-network
and scan-wifi steps do on the host, and the trial's own way back.

These modules sit between the pure rules (domain/network/) and the primitive effects
(effects/network.py) because each trial step records the trial's stage before the effect it
is about to run, the same intent-before-effect protocol the tick keeps for its steps:
- trial_steps.py: begin, write and generate, apply with the deadline, keep, restore;
- step_effects.py: the operation steps the tick runs (app.py adds them to its table of effects);
- rollback.py: `network-rollback` (the deadline timer) and `network-recovery` (boot);
- view.py: the tick's `network` capability, and the tidying of what an ended trial left.
"""
