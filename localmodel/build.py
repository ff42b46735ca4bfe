"""`llama-server` from the llama.cpp sources vendored in the pinned `llama-cpp-python` sdist, built once.

Why from that sdist: PyPI is the one registry here that carries llama.cpp's sources, versioned and
checksummed. Only the server target is built (Release, CPU, static), with every download switch off:
no prebuilt web UI from a remote bucket, no HTTPS client, no llguidance (a Rust fetch). The result
lives in `.localmodel/<package>-<version>/` under a stamp that records the version and the flags, so a
second run does not rebuild and a new pin (or new flags) builds beside the old one.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable, Sequence
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
)

Runner = Callable[..., subprocess.CompletedProcess[str]]


class BuildError(RuntimeError):
    """The runtime could not be fetched or built; the message says which step and where its log is."""


def cache_dir(root: Path, pin: RuntimePin = RUNTIME) -> Path:
    return root / f"{pin.package}-{pin.version}"


def build_key(pin: RuntimePin = RUNTIME, flags: Sequence[str] = CMAKE_FLAGS) -> str:
    """What a cached binary was built from: the sdist (by checksum) and the cmake flags."""
    text = json.dumps({"sdist": pin.sdist_sha256, "version": pin.version, "flags": list(flags)}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def server_path(root: Path, pin: RuntimePin = RUNTIME) -> Path:
    return cache_dir(root, pin) / "bin" / "llama-server"


def cached_server(root: Path, pin: RuntimePin = RUNTIME, flags: Sequence[str] = CMAKE_FLAGS) -> Path | None:
    """The built server when its stamp matches this pin and these flags, else None (build it)."""
    binary = server_path(root, pin)
    stamp = cache_dir(root, pin) / STAMP
    if not binary.is_file() or not stamp.is_file():
        return None
    try:
        recorded = json.loads(stamp.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return binary if isinstance(recorded, dict) and recorded.get("key") == build_key(pin, flags) else None


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
) -> Path:
    """The path of a built `llama-server` for `pin`, building it (and fetching the sdist) when not cached."""
    found = cached_server(root, pin)
    if found:
        say(f"localmodel: llama-server {pin.requirement} cached ({found})")
        return found
    home = cache_dir(root, pin)
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
    say(f"localmodel: building llama-server from {pin.requirement} (Release, CPU, -j {jobs}; log {log})")
    for step, command in zip(("cmake configure", "cmake build"), cmake_commands(source, build, jobs), strict=True):
        _run(command, log, step, run)
    built = build / "bin" / "llama-server"
    if not built.is_file():
        raise BuildError(f"the build finished without {built}; see {log}")
    binary = server_path(root, pin)
    binary.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(built, binary)
    seconds = round(time.monotonic() - started, 1)
    stamp = {"key": build_key(pin), "version": pin.version, "flags": list(CMAKE_FLAGS), "build_seconds": seconds}
    (home / STAMP).write_text(json.dumps(stamp, indent=2) + "\n", encoding="utf-8")
    for scratch in (build, source):  # objects and sources, ~300 MB: the binary and the sdist are kept
        shutil.rmtree(scratch, ignore_errors=True)
    say(f"localmodel: built {binary} in {seconds:.0f} s")
    return binary
