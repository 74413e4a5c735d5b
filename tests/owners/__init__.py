"""Readers of formats another tool owns, held to that tool (dpkg, netplan, huggingface_hub,
os-release, modprobe.d) on real and generated data (issue #25)."""
