"""Host facts for the convergence playbook, read under a root (argv[1]); stdlib only.

Prints one JSON object: osId, versionId (unquoted /etc/os-release values), arch
(/proc/sys/kernel/arch, else uname on the real root), displays (PCI class 0x03 devices:
address, vendor, class, driver), nvidiaDisplay, nvidiaCompute, amdDisplay, pciReadable and
nvidiaPackages (installed nvidia-* packages from /var/lib/dpkg/status: name -> version).

An NVIDIA display host has an NVIDIA VGA-compatible controller (class 0x0300, vendor 10de); an
NVIDIA 3D controller (0x0302, H100/H200) drives no display and keeps the GPU Operator's driver
path: nvidiaCompute lists the addresses of the NVIDIA display-class devices that are not VGA
(convergence.md; the worker's own view is magicstick_host/domain/convergence/display.py).
"""

import json
import os
import re
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else "/"


def host(path):
    return os.path.join(ROOT, path.lstrip("/"))


def read(path):
    try:
        with open(host(path), encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except OSError:
        return None


def os_release():
    values = {}
    for line in (read("/etc/os-release") or "").splitlines():
        key, sep, value = line.partition("=")
        if sep:
            values[key.strip()] = value.strip().strip("\"'")
    return values.get("ID", ""), values.get("VERSION_ID", "")


def arch():
    text = read("/proc/sys/kernel/arch")
    if text:
        return text.strip()
    return os.uname().machine if os.path.realpath(ROOT) == "/" else ""


def displays():
    base = "/sys/bus/pci/devices"
    try:
        names = sorted(os.listdir(host(base)))
    except OSError:
        return None
    found = []
    for name in names:
        device = f"{base}/{name}"
        pci_class = (read(f"{device}/class") or "").strip().lower()
        if not pci_class.startswith("0x03"):
            continue
        vendor = (read(f"{device}/vendor") or "").strip().lower().removeprefix("0x")
        try:
            driver = os.path.basename(os.readlink(host(f"{device}/driver")))
        except OSError:
            driver = ""
        found.append({"address": name, "vendor": vendor, "class": pci_class[2:],
                      "driver": driver})
    return found


def nvidia_packages():
    installed = {}
    for stanza in (read("/var/lib/dpkg/status") or "").split("\n\n"):
        fields = dict(re.findall(r"(?m)^([A-Za-z-]+): (.*)$", stanza))
        name = fields.get("Package", "")
        if name.startswith("nvidia-") and fields.get("Status") == "install ok installed":
            installed[name] = fields.get("Version", "")
    return installed


def nvidia_display(device):
    return device["vendor"] == "10de" and device["class"].startswith("0300")


os_id, version_id = os_release()
pci = displays()
print(json.dumps({
    "osId": os_id,
    "versionId": version_id,
    "arch": arch(),
    "pciReadable": pci is not None,
    "displays": pci or [],
    "nvidiaDisplay": any(nvidia_display(d) for d in pci or []),
    "nvidiaCompute": [d["address"] for d in pci or []
                      if d["vendor"] == "10de" and not nvidia_display(d)],
    "amdDisplay": any(d["vendor"] == "1002" for d in pci or []),
    "nvidiaPackages": nvidia_packages(),
}, sort_keys=True))
