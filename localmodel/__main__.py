"""`python -m localmodel smoke|serve|record|build`: the local open-weights model route (see docs/local-models.md).

smoke [openai|anthropic]   build/fetch what is missing, run the smoke (default: both protocols)
serve [--port N]           run the pinned llama-server in the foreground until Ctrl-C
record OUT_DIR --tools F   record real exchanges as JSON (the provider tests' inputs)
record-judge OUT_DIR       record the factuality judge's requests and answers (the judge tests' inputs)
build                      only build (or find) llama-server and unpack the model
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from pathlib import Path

from localmodel.build import BuildError, ensure_server, record_illegal_instruction
from localmodel.checksum import ChecksumError
from localmodel.model import ModelError, ensure_model
from localmodel.pins import MODEL
from localmodel.server import IllegalInstruction, LocalServer, ServerError, ServerOptions, free_port
from localmodel.smoke import CACHE, TEMPLATE, _sigterm_as_interrupt
from localmodel.smoke import main as smoke_main


def serve(port: int | None, context: int) -> int:
    binary, gguf = ensure_server(CACHE), ensure_model(CACHE)
    options = ServerOptions(binary, gguf, MODEL.alias, port or free_port(), context, chat_template=TEMPLATE)
    signal.signal(signal.SIGTERM, _sigterm_as_interrupt)
    try:
        with LocalServer(options, CACHE / "serve.log") as server:
            print(f"localmodel: serving {MODEL.alias} at {server.url} (log {server.log}); Ctrl-C stops it", flush=True)
            print(f"  EVAL_MODEL=openai:{MODEL.alias} OPENAI_BASE_URL={server.url}/v1 OPENAI_API_KEY=local")
            print(f"  EVAL_MODEL=anthropic:{MODEL.alias} ANTHROPIC_BASE_URL={server.url} ANTHROPIC_API_KEY=local")
            while server.process is not None and server.process.poll() is None:
                time.sleep(1)
            print(f"localmodel: llama-server exited:\n{server.log_tail()}", file=sys.stderr)
            return 1
    except KeyboardInterrupt:
        return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m localmodel", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    smoke = sub.add_parser("smoke")
    smoke.add_argument("protocols", nargs="*", help="openai and/or anthropic (default: both)")
    serving = sub.add_parser("serve")
    serving.add_argument("--port", type=int)
    serving.add_argument("--ctx-size", type=int, default=MODEL.context_window)
    recording = sub.add_parser("record")
    recording.add_argument("out", type=Path)
    recording.add_argument("--tools", type=Path, required=True, help="a `python -m localneon.snapshot` file")
    judging = sub.add_parser("record-judge")
    judging.add_argument("out", type=Path)
    sub.add_parser("build")
    args = parser.parse_args(argv)
    unknown = sorted(set(getattr(args, "protocols", None) or []) - {"openai", "anthropic"})
    if unknown:
        parser.error(f"smoke: unknown protocol {', '.join(unknown)} (choose openai, anthropic)")
    try:
        if args.command == "smoke":
            return smoke_main(args.protocols)
        if args.command == "serve":
            return serve(args.port, args.ctx_size)
        if args.command == "record":
            from localmodel import record

            return record.main(args.out, args.tools, ensure_server(CACHE), ensure_model(CACHE), TEMPLATE)
        if args.command == "record-judge":
            from localmodel import record_judge

            binary, gguf = ensure_server(CACHE), ensure_model(CACHE)
            return record_judge.main(args.out, binary, gguf, TEMPLATE, CACHE / "record-judge.log")
        ensure_server(CACHE)
        ensure_model(CACHE)
        return 0
    except IllegalInstruction as error:
        marker = record_illegal_instruction(CACHE)
        print(
            f"localmodel: {error}\nlocalmodel: noted in {marker}; the next run builds the baseline profile",
            file=sys.stderr,
        )
        return 2
    except (BuildError, ModelError, ChecksumError, ServerError) as error:
        print(f"localmodel: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
