"""The local open-weights model route: llama-server built from a PyPI sdist, a pinned GGUF, `make smoke`."""
