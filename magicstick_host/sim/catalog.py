"""Realistic building blocks of simulated hosts: OS identities, packages, CPUs, modprobe files."""

from __future__ import annotations

from magicstick_host.sim.model import Cpu, Module, Package

ZEN5_FLAGS = (
    "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr "
    "sse sse2 ht syscall nx mmxext fxsr_opt pdpe1gb rdtscp lm constant_tsc rep_good amd_lbr_v2 "
    "nopl xtopology nonstop_tsc cpuid extd_apicid aperfmperf rapl pni pclmulqdq monitor ssse3 "
    "fma cx16 sse4_1 sse4_2 x2apic movbe popcnt aes xsave avx f16c rdrand lahf_lm cmp_legacy "
    "svm extapic cr8_legacy abm sse4a misalignsse 3dnowprefetch osvw ibs skinit wdt tce topoext "
    "perfctr_core perfctr_nb bpext perfctr_llc mwaitx cpb cat_l3 cdp_l3 hw_pstate ssbd mba "
    "perfmon_v2 ibrs ibpb stibp ibrs_enhanced vmmcall fsgsbase bmi1 avx2 smep bmi2 erms invpcid "
    "cqm rdt_a avx512f avx512dq rdseed adx smap avx512ifma clflushopt clwb avx512cd sha_ni "
    "avx512bw avx512vl xsaveopt xsavec xgetbv1 xsaves avx_vnni avx512_bf16 clzero irperf "
    "xsaveerptr rdpru wbnoinvd cppc arat npt lbrv svm_lock nrip_save tsc_scale vmcb_clean "
    "flushbyasid decodeassists pausefilter pfthreshold avic v_vmsave_vmload vgif x2avic "
    "v_spec_ctrl vnmi avx512vbmi umip pku ospke avx512_vbmi2 gfni vaes vpclmulqdq avx512_vnni "
    "avx512_bitalg avx512_vpopcntdq rdpid bus_lock_detect movdiri movdir64b overflow_recov "
    "succor smca fsrm avx512_vp2intersect flush_l1d amd_lbr_pmc_freeze"
)
INTEL_FLAGS = (
    "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush dts acpi "
    "mmx fxsr sse sse2 ss ht tm pbe syscall nx pdpe1gb rdtscp lm constant_tsc art arch_perfmon "
    "pebs bts rep_good nopl xtopology nonstop_tsc cpuid aperfmperf tsc_known_freq pni pclmulqdq "
    "dtes64 monitor ds_cpl vmx est tm2 ssse3 sdbg fma cx16 xtpr pdcm sse4_1 sse4_2 x2apic movbe "
    "popcnt tsc_deadline_timer aes xsave avx f16c rdrand lahf_lm abm 3dnowprefetch cpuid_fault "
    "epb intel_ppin ssbd ibrs ibpb stibp ibrs_enhanced fsgsbase bmi1 avx2 smep bmi2 erms "
    "invpcid rdseed adx smap clflushopt clwb intel_pt sha_ni xsaveopt xsavec xgetbv1 xsaves "
    "avx_vnni dtherm ida arat pln pts hwp umip pku ospke waitpkg gfni vaes vpclmulqdq rdpid "
    "movdiri movdir64b fsrm md_clear serialize arch_lbr ibt flush_l1d arch_capabilities"
)
STRIX_HALO_CPU = Cpu(
    "AMD RYZEN AI MAX+ 395 w/ Radeon 8060S", flags=ZEN5_FLAGS, mhz=2994.0, bogomips=5988.77
)
EPYC_CPU = Cpu(
    "AMD EPYC 9454 48-Core Processor", family=25, model=17, stepping=1, microcode="0xa101148",
    threads=96, cores=48, mhz=2750.0, cache_kb=1024, bogomips=5492.42, flags=ZEN5_FLAGS,
    address_sizes="52 bits physical, 57 bits virtual",
)
EC2_CPU = Cpu(
    "AMD EPYC 9R14", family=25, model=17, stepping=1, microcode="0xa10114e", threads=16,
    cores=16, mhz=3700.0, bogomips=5200.0, flags=ZEN5_FLAGS,
)
METEOR_LAKE_CPU = Cpu(
    "Intel(R) Core(TM) Ultra 7 155H", vendor_id="GenuineIntel", family=6, model=170,
    stepping=4, microcode="0x20", threads=22, cores=16, mhz=1400.0, cache_kb=24576,
    bogomips=5990.40, flags=INTEL_FLAGS, address_sizes="46 bits physical, 48 bits virtual",
)
FRAMEWORK_DMI = {
    "sys_vendor": "Framework",
    "product_name": "Desktop (AMD Ryzen AI Max 300 Series)",
    "product_family": "Desktop",
    "board_vendor": "Framework",
    "board_name": "FRANMFCP06",
    "bios_vendor": "INSYDE Corp.",
    "bios_version": "03.02",
    "bios_date": "07/03/2025",
    "chassis_type": "3",
}
HP_DMI = {
    "sys_vendor": "HP",
    "product_name": "HP Z2 Mini G1a Workstation Desktop PC",
    "product_family": "103C_53335X HP Workstation",
    "board_vendor": "HP",
    "board_name": "8D1C",
    "bios_vendor": "HP",
    "bios_version": "X53 Ver. 01.02.01",
    "bios_date": "06/12/2025",
    "chassis_type": "3",
}
UBUNTU_CODENAMES = {"24.04": ("noble", "Noble Numbat", "24.04.3"), "26.04": ("resolute",
                    "Resolute Raccoon", "26.04")}


def ubuntu_os(version: str) -> dict[str, str]:
    codename, series, point = UBUNTU_CODENAMES[version]
    return {
        "PRETTY_NAME": f'"Ubuntu {point} LTS"',
        "NAME": '"Ubuntu"',
        "VERSION_ID": f'"{version}"',
        "VERSION": f'"{point} LTS ({series})"',
        "VERSION_CODENAME": codename,
        "ID": "ubuntu",
        "ID_LIKE": "debian",
        "HOME_URL": '"https://www.ubuntu.com/"',
        "SUPPORT_URL": '"https://help.ubuntu.com/"',
        "BUG_REPORT_URL": '"https://bugs.launchpad.net/ubuntu/"',
        "PRIVACY_POLICY_URL": '"https://www.ubuntu.com/legal/terms-and-policies/privacy-policy"',
        "UBUNTU_CODENAME": codename,
        "LOGO": "ubuntu-logo",
    }


DEBIAN_13_OS = {
    "PRETTY_NAME": '"Debian GNU/Linux 13 (trixie)"',
    "NAME": '"Debian GNU/Linux"',
    "VERSION_ID": '"13"',
    "VERSION": '"13 (trixie)"',
    "VERSION_CODENAME": "trixie",
    "DEBIAN_VERSION_FULL": "13.1",
    "ID": "debian",
    "HOME_URL": '"https://www.debian.org/"',
    "SUPPORT_URL": '"https://www.debian.org/support"',
    "BUG_REPORT_URL": '"https://bugs.debian.org/"',
}


def kernel_packages(
    release: str, image_version: str, meta: str, meta_version: str, *, signed_source: str
) -> list[Package]:
    """The image/modules packages of one kernel plus the meta packages that pull it in."""
    flavour = meta.removeprefix("linux-generic")  # "" or "-hwe-24.04"
    return [
        Package(meta, meta_version, "kernel", "Complete Generic Linux kernel and headers",
                source="linux-meta" + flavour.replace("-24.04", ""), installed_size=13,
                depends=f"linux-image-generic{flavour} (= {meta_version}), "
                        f"linux-headers-generic{flavour} (= {meta_version})"),
        Package(f"linux-image-generic{flavour}", meta_version, "kernel",
                "Generic Linux kernel image", source="linux-meta" + flavour.replace("-24.04", ""),
                installed_size=13, depends=f"linux-image-{release}, linux-firmware"),
        Package(f"linux-image-{release}", image_version, "kernel",
                "Signed kernel image generic\nA kernel image for generic.", source=signed_source,
                installed_size=15_812, depends=f"linux-modules-{release}"),
        Package(f"linux-modules-{release}", image_version, "kernel",
                f"Linux kernel extra modules for version {release.rsplit('-', 1)[0]}",
                source=signed_source.replace("-signed", ""), installed_size=131_420),
        Package(f"linux-headers-generic{flavour}", meta_version, "kernel",
                "Generic Linux kernel headers", source="linux-meta" + flavour.replace("-24.04", ""),
                installed_size=13, depends=f"linux-headers-{release}"),
        Package(f"linux-headers-{release}", image_version, "devel",
                f"Linux kernel headers for version {release.rsplit('-', 1)[0]}",
                source=signed_source.replace("-signed", ""), installed_size=29_876,
                depends=f"linux-headers-{release.rsplit('-', 1)[0]}"),
        Package(f"linux-headers-{release.rsplit('-', 1)[0]}", image_version, "devel",
                "Header files related to Linux kernel version "
                f"{release.split('-')[0]}", architecture="all",
                source=signed_source.replace("-signed", ""), installed_size=94_512),
    ]


def signed_source(meta: str, release: str) -> str:
    """The source package of a signed kernel image: linux-signed or linux-signed-hwe-X.Y."""
    if meta.endswith("-hwe-24.04"):
        major, minor = release.split(".")[:2]
        return f"linux-signed-hwe-{major}.{minor}"
    return "linux-signed"


def base_packages(version: str) -> list[Package]:
    """A handful of ordinary packages, so the status file is not only the interesting ones."""
    newer = version == "26.04"
    return [
        Package("base-files", "14ubuntu4" if newer else "13ubuntu10.3", "admin",
                "Debian base system miscellaneous files", priority="required", essential=True,
                installed_size=400),
        Package("libc6", "2.42-0ubuntu3" if newer else "2.39-0ubuntu8.6", "libs",
                "GNU C Library: Shared libraries\nContains the standard libraries.",
                priority="required", multi_arch="same", source="glibc", installed_size=12_989),
        Package("systemd", "258.1-1ubuntu3" if newer else "255.4-1ubuntu8.11", "admin",
                "system and service manager", priority="important", installed_size=11_268),
        Package("apt", "3.1.6ubuntu2" if newer else "2.8.3", "admin",
                "commandline package manager", priority="important", installed_size=4_248),
        Package("cloud-init", "25.3-0ubuntu1" if newer else "25.2-0ubuntu1~24.04.1", "admin",
                "initialization and customization tool for cloud instances",
                architecture="all", installed_size=3_120),
        Package("linux-firmware", "20251009.git6fb3a7e1-0ubuntu1" if newer
                else "20240318.git3b128b60-0ubuntu2.17", "misc",
                "Firmware for Linux kernel drivers", architecture="all", installed_size=1_263_120),
        Package("linux-image-6.8.0-31-generic", "6.8.0-31.31", "kernel",
                "Signed kernel image generic", status="deinstall ok config-files",
                source="linux-signed"),
    ]


def nvidia_packages(version: str) -> list[Package]:
    suffix = "0ubuntu1" if version == "26.04" else "0ubuntu0.24.04.2"
    return [
        Package("nvidia-driver-580-open", f"580.95.05-{suffix}", "restricted/libs",
                "NVIDIA driver (open kernel) metapackage", installed_size=10,
                source="nvidia-graphics-drivers-580"),
        Package("nvidia-kernel-common-580", f"580.95.05-{suffix}", "restricted/libs",
                "Shared files used with the kernel module", installed_size=75_412,
                source="nvidia-graphics-drivers-580"),
        Package("nvidia-compute-utils-580", f"580.95.05-{suffix}", "restricted/libs",
                "NVIDIA compute utilities (nvidia-persistenced, nvidia-smi)",
                installed_size=1_232, source="nvidia-graphics-drivers-580"),
    ]


def amdgpu_modules(ttm_module: str = "ttm") -> list[Module]:
    return [
        Module("amdgpu", {"gttsize": "-1", "gartsize": "-1", "vramlimit": "0", "runpm": "-1"}),
        Module(ttm_module, holders=["amdgpu", "drm_ttm_helper"]),
        Module("drm_ttm_helper", holders=["amdgpu"]),
        Module("gpu_sched", holders=["amdgpu", "amdxcp"]),
        Module("amdxcp", holders=["amdgpu"]),
    ]


def nvidia_modules() -> list[Module]:
    return [
        Module("nvidia", {"NVreg_EnableGpuFirmware": "18"}, holders=["nvidia_modeset",
               "nvidia_uvm"], version="580.95.05"),
        Module("nvidia_modeset", holders=["nvidia_drm"], version="580.95.05"),
        Module("nvidia_uvm", version="580.95.05"),
        Module("nvidia_drm", {"modeset": "Y", "fbdev": "Y"}, version="580.95.05"),
    ]


def ubuntu_modprobe_files(*, nvidia: bool = False) -> dict[str, str]:
    files = {
        "etc/modprobe.d/alsa-base.conf": (
            "# autoloader aliases\ninstall sound-slot-0 /sbin/modprobe snd-card-0\n"
            "# Keep snd-pcsp from being loaded as first soundcard\noptions snd-pcsp index=-2\n"
            "# Keep snd-usb-audio from beeing loaded as first soundcard\n"
            "options snd-usb-audio index=-2\n"
        ),
        "etc/modprobe.d/blacklist.conf": (
            "# This file lists those modules which we don't want to be loaded by\n"
            "# alias expansion, usually so some other driver will be loaded for the\n"
            "# device instead.\n\n# evbug is a debug tool\nblacklist evbug\n"
            "# replaced by e100\nblacklist eepro100\n"
        ),
        "etc/modprobe.d/iwlwifi.conf": (
            "# /etc/modprobe.d/iwlwifi.conf\n# iwlwifi will dyamically load either iwldvm or "
            "iwlmvm depending on the\n# microcode file installed on the system.\n"
            "remove iwlwifi \\\n(/sbin/lsmod | grep -o -e ^iwlmvm -e ^iwldvm -e ^iwlwifi | "
            "xargs /sbin/rmmod) \\\n&& /sbin/modprobe -r mac80211\n"
        ),
        "usr/lib/modprobe.d/systemd.conf": (
            "#  This file is part of systemd.\n\noptions bonding max_bonds=0\n"
            "options dummy numdummies=0\noptions ifb numifbs=0\n"
        ),
        "usr/lib/modprobe.d/amd64-microcode-blacklist.conf": (
            "# The microcode module attempts to apply a microcode update when\n"
            "# it autoloads.  This is not always safe, so we block it by default.\n"
            "blacklist microcode\n"
        ),
    }
    if nvidia:
        files["usr/lib/modprobe.d/nvidia-graphics-drivers-kms.conf"] = (
            "# This file was generated by nvidia-prime\n"
            "# Set value to 0 to disable modesetting\noptions nvidia-drm modeset=1\n"
        )
    return files
