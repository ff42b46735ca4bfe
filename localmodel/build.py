"""`llama-server` from the llama.cpp sources vendored in the pinned `llama-cpp-python` sdist, built once.

Why from that sdist: PyPI is the one registry here that carries llama.cpp's sources, versioned and
checksummed. Only the server target is built (Release, CPU, static), with every download switch off:
no prebuilt web UI from a remote bucket, no HTTPS client, no llguidance (a Rust fetch). The result
lives in `.localmodel/<package>-<version>-<profile>/` under a stamp that records the version and the
flags, so a second run does not rebuild and a new pin (or new flags) builds beside the old one.

Why profiles and never `-march=native`: a binary tuned to the CPU that compiled it died of SIGILL on
CI right after the model loaded (the build and the run need not meet the same CPU on a virtual
machine). The `portable` profile asks for x86-64-v3 (AVX2, FMA, F16C, BMI2; no AVX-512); a CPU
without those, or one on which the portable binary died of SIGILL once (`record_illegal_instruction`),
gets the `baseline` profile with every optional instruction set off.
"""

from __future__ import annotations

import hashlib
import json
import platform
import shutil
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from localmodel.checksum import verify
from localmodel.pins import RUNTIME, RuntimePin

STAMP = "built.json"
VENDORED = "vendor/llama.cpp/"
CMAKE_FLAGS: tuple[str, ...] = (
    "-DCMAKE_BUILD_TYPE=Release",
    "-DBUILD_SHARED_LIBS=OFF",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DLLAMA_BUILD_TOOLS=ON",  # the server lives under tools/
    "-DLLAMA_BUILD_SERVER=ON",
    "-DLLAMA_BUILD_APP=OFF",
    "-DLLAMA_BUILD_UI=OFF",  # no npm build of the web UI
    "-DLLAMA_USE_PREBUILT_UI=OFF",  # no download of the prebuilt UI: the server runs without one
    "-DLLAMA_OPENSSL=OFF",  # no HTTPS client: the server never fetches models
    "-DLLAMA_LLGUIDANCE=OFF",
    "-DGGML_CCACHE=OFF",
    "-DFETCHCONTENT_FULLY_DISCONNECTED=ON",
    "-DGGML_NATIVE=OFF",  # never tuned to the compiling CPU: ggml then turns on x86-64-v3, no AVX-512
)
ILLEGAL_INSTRUCTION = "illegal-instruction"  # beside a portable build that died of SIGILL here
X86_MACHINES = frozenset({"x86_64", "amd64", "i686", "i386"})
X86_64_V3 = frozenset({"sse4_2", "avx", "avx2", "bmi2", "fma", "f16c"})  # what GGML_NATIVE=OFF turns on


@dataclass(frozen=True)
class BuildProfile:
    """A named set of cmake flags; each profile is built into a folder of its own."""

    name: str
    flags: tuple[str, ...]


PORTABLE = BuildProfile("portable", CMAKE_FLAGS)
BASELINE = BuildProfile(
    "baseline", (*CMAKE_FLAGS, *(f"-DGGML_{part}=OFF" for part in ("AVX", "AVX2", "BMI2", "FMA", "F16C")))
)

Runner = Callable[..., subprocess.CompletedProcess[str]]


class BuildError(RuntimeError):
    """The runtime could not be fetched or built; the message says which step and where its log is."""


def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> frozenset[str] | None:
    """The first CPU's feature flags as Linux lists them, or None where there is no such file."""
    try:
        text = cpuinfo.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        name, _, value = line.partition(":")
        if name.strip() == "flags":
            return frozenset(value.split())
    return None


def choose_profile(
    root: Path, pin: RuntimePin = RUNTIME, machine: str = "", flags: frozenset[str] | None = None
) -> BuildProfile:
    """`portable` unless this x86 CPU lacks part of x86-64-v3 or the portable build already died of SIGILL here."""
    if (cache_dir(root, pin, PORTABLE) / ILLEGAL_INSTRUCTION).exists():
        return BASELINE
    machine = (machine or platform.machine()).lower()
    found = flags if flags is not None else cpu_flags()
    if machine in X86_MACHINES and found is not None and not found >= X86_64_V3:
        return BASELINE
    return PORTABLE


def record_illegal_instruction(root: Path, pin: RuntimePin = RUNTIME) -> Path:
    """Note that the portable build died of SIGILL on this machine: later runs build and use `baseline`."""
    marker = cache_dir(root, pin, PORTABLE) / ILLEGAL_INSTRUCTION
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text("llama-server (portable profile) was killed by SIGILL on this CPU\n", encoding="utf-8")
    return marker


def cache_dir(root: Path, pin: RuntimePin = RUNTIME, profile: BuildProfile = PORTABLE) -> Path:
    return root / f"{pin.package}-{pin.version}-{profile.name}"


def build_key(pin: RuntimePin = RUNTIME, flags: Sequence[str] = CMAKE_FLAGS) -> str:
    """What a cached binary was built from: the sdist (by checksum) and the cmake flags."""
    text = json.dumps({"sdist": pin.sdist_sha256, "version": pin.version, "flags": list(flags)}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def server_path(root: Path, pin: RuntimePin = RUNTIME, profile: BuildProfile = PORTABLE) -> Path:
    return cache_dir(root, pin, profile) / "bin" / "llama-server"


def cached_server(root: Path, pin: RuntimePin = RUNTIME, profile: BuildProfile = PORTABLE) -> Path | None:
    """The built server when its stamp matches this pin and the profile's flags, else None (build it)."""
    binary = server_path(root, pin, profile)
    stamp = cache_dir(root, pin, profile) / STAMP
    if not binary.is_file() or not stamp.is_file():
        return None
    try:
        recorded = json.loads(stamp.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return binary if isinstance(recorded, dict) and recorded.get("key") == build_key(pin, profile.flags) else None


def cmake_commands(source: Path, build: Path, jobs: int, flags: Sequence[str] = CMAKE_FLAGS) -> list[list[str]]:
    """Configure, then build only the `llama-server` target with `jobs` compilers at once."""
    return [
        ["cmake", "-S", str(source), "-B", str(build), *flags],
        ["cmake", "--build", str(build), "--target", "llama-server", "-j", str(jobs)],
    ]


def download_command(pin: RuntimePin, into: Path) -> list[str]:
    """pip fetches the sdist itself (`--no-binary` for this package only: its build backend comes as a wheel)."""
    return [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--quiet",
        "--no-deps",
        "--no-binary",
        pin.package,
        pin.requirement,
        "-d",
        str(into),
    ]


def extract_vendored(sdist: Path, into: Path) -> None:
    """Unpack only the sdist's vendored llama.cpp tree into `into` (the Python bindings are not needed)."""
    if into.exists():
        shutil.rmtree(into)
    with tarfile.open(sdist) as archive:
        top = archive.getnames()[0].split("/", 1)[0]
        prefix = f"{top}/{VENDORED}"
        members = []
        for member in archive.getmembers():
            if member.name.startswith(prefix):
                member.name = member.name[len(prefix) :]
                members.append(member)
        if not members:
            raise BuildError(f"{sdist.name}: no {VENDORED} in the sdist")
        archive.extractall(into, members=members, filter="data")


def _run(command: list[str], log: Path, step: str, run: Runner) -> None:
    with log.open("a", encoding="utf-8") as out:
        out.write(f"$ {' '.join(command)}\n")
        out.flush()
        result = run(command, stdout=out, stderr=subprocess.STDOUT, text=True, check=False)
    if result.returncode != 0:
        raise BuildError(f"{step} failed (exit {result.returncode}); see {log}")


def ensure_server(
    root: Path,
    pin: RuntimePin = RUNTIME,
    jobs: int = 2,
    run: Runner = subprocess.run,
    say: Callable[[str], None] = print,
    profile: BuildProfile | None = None,
) -> Path:
    """The path of a built `llama-server` for `pin`, building it (and fetching the sdist) when not cached."""
    profile = profile or choose_profile(root, pin)
    found = cached_server(root, pin, profile)
    if found:
        say(f"localmodel: llama-server {pin.requirement} ({profile.name}) cached ({found})")
        return found
    home = cache_dir(root, pin, profile)
    home.mkdir(parents=True, exist_ok=True)
    log = home / "build.log"
    log.write_text("", encoding="utf-8")
    started = time.monotonic()
    sdist = home / pin.sdist_name
    if not sdist.is_file():
        say(f"localmodel: downloading the {pin.requirement} sdist")
        _run(download_command(pin, home), log, "pip download", run)
        if not sdist.is_file():
            raise BuildError(f"pip download left no {sdist.name} in {home}; see {log}")
    verify(sdist, pin.sdist_sha256, f"{pin.requirement} sdist")
    source, build = home / "src", home / "build"
    extract_vendored(sdist, source)
    say(f"localmodel: building llama-server {pin.requirement}, {profile.name} (Release, CPU, -j {jobs}; log {log})")
    commands = cmake_commands(source, build, jobs, profile.flags)
    for step, command in zip(("cmake configure", "cmake build"), commands, strict=True):
        _run(command, log, step, run)
    built = build / "bin" / "llama-server"
    if not built.is_file():
        raise BuildError(f"the build finished without {built}; see {log}")
    binary = server_path(root, pin, profile)
    binary.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(built, binary)
    seconds = round(time.monotonic() - started, 1)
    stamp = {
        "key": build_key(pin, profile.flags),
        "version": pin.version,
        "profile": profile.name,
        "flags": list(profile.flags),
        "build_seconds": seconds,
    }
    (home / STAMP).write_text(json.dumps(stamp, indent=2) + "\n", encoding="utf-8")
    for scratch in (build, source):  # objects and sources, ~300 MB: the binary and the sdist are kept
        shutil.rmtree(scratch, ignore_errors=True)
    say(f"localmodel: built {binary} in {seconds:.0f} s")
    return binary
