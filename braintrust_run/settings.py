"""The evals' own settings: what a run needs beyond one trial's `Settings`, read once per process.

`EvalSettings` is read from the process environment's one snapshot (`harness.environment.process_env`)
and passed down; `current()` gives this process's object to the code Braintrust calls without a way to
pass it (the reporter, the run's start), read once. Each value is parsed where it is read here, once,
with the message that names the variable; each default is one constant below. A launcher
(`python -m evals`, `python -m evals.calibrate`) builds its child's environment explicitly
(`launch_environment`: `.env` under the real environment, then its own choices) instead of writing
`os.environ`.

`harness/config.py` (`Settings`: what a trial needs) and `harness/environment.py` (the snapshot, and
where things are on this machine) are the other settings modules; `tests/test_architecture.py` fails
on an environment read anywhere else.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING

from dotenv import dotenv_values

from harness.config import new_run_id
from harness.environment import DEFAULT_RESULTS_DIR, process_env, read_once
from harness.mcp.toolview import DECOYS

if TYPE_CHECKING:
    from braintrust_run.shard import Shard

DEFAULT_PROJECT = "neon-mcp-evals"  # EVAL_PROJECT
DEFAULT_TRIALS = 20  # EVAL_TRIALS: as in Neon's original suite
OFFLINE_DEFAULT_TRIALS = "2"  # EVAL_TRIALS for a run without a model key, or of a local model
DEFAULT_CONCURRENCY = 4  # EVAL_CONCURRENCY
DEFAULT_MAX_INFRA_ERRORS = 0.1
DEFAULT_MAX_JUDGE_ERRORS = 0.1
DEFAULT_MAX_NO_ANSWERS = 0.1
# Every share the gate reads, with its default: all checked before the first trial (`check_limits`).
SHARE_LIMITS = MappingProxyType(
    {
        "EVAL_MAX_INFRA_ERRORS": DEFAULT_MAX_INFRA_ERRORS,
        "EVAL_MAX_JUDGE_ERRORS": DEFAULT_MAX_JUDGE_ERRORS,
        "EVAL_MAX_NO_ANSWERS": DEFAULT_MAX_NO_ANSWERS,
    }
)
ALLOW_DAMAGE = "EVAL_ALLOW_MAIN_DAMAGE"
CALIBRATION_SWITCH = "EVAL_JUDGE_CALIBRATION"
CALIBRATION_REPEATS = "EVAL_CALIBRATION_REPEATS"
DEFAULT_CALIBRATION_REPEATS = 2  # each example judged twice: the fewest that show whether the judge repeats itself
MAX_CALIBRATION_REPEATS = 10  # 80 examples x 10 is 800 judge calls per judge model
JUDGE_ROUTES = ("braintrust", "anthropic", "openai", "none")
_YES = ("1", "true", "yes")
_NO = ("", "0", "false", "no")


class CalibrationConfigError(RuntimeError):
    """Calibration was asked for but cannot run; the message names the variable to set."""


def parse_floors(text: str) -> dict[str, float]:
    """Parse `name=0.9,other=1` into floors; a malformed entry is a configuration error."""
    floors: dict[str, float] = {}
    for part in filter(None, (piece.strip() for piece in text.split(","))):
        name, separator, value = part.partition("=")
        try:
            floor = float(value)
        except ValueError:
            floor = -1.0
        if not separator or not name.strip() or not 0 <= floor <= 1:
            raise ValueError(f"EVAL_MIN_PASS: '{part}' is not name=number with the number in [0, 1]")
        floors[name.strip()] = floor
    return floors


def decoy_sweep(text: str) -> list[int]:
    """`EVAL_DECOY_SWEEP=0,4,8,12`: one experiment per decoy count (a degradation curve over catalog size)."""
    counts: list[int] = []
    for part in filter(None, (piece.strip() for piece in text.split(","))):
        if not part.isdigit() or int(part) > len(DECOYS):
            raise ValueError(f"EVAL_DECOY_SWEEP: {part!r} is not a decoy count from 0 to {len(DECOYS)}")
        counts.append(int(part))
    return sorted(set(counts))


def check_judge_provider(value: str) -> None:
    """A misspelt judge route would silently fall back to another judge: refuse it instead."""
    if value.strip() and value.strip().lower() not in JUDGE_ROUTES:
        raise ValueError(f"EVAL_JUDGE_PROVIDER: {value!r} is not one of {', '.join(JUDGE_ROUTES)}")


def launch_environment(dotenv_path: Path) -> dict[str, str]:
    """The environment a launcher gives its child: `.env` under the real environment (real variables win,
    as `load_dotenv` does), to which it adds its own choices. UnicodeDecodeError for a `.env` that is
    not UTF-8, for the launcher to name."""
    values = dotenv_values(dotenv_path, encoding="utf-8") if dotenv_path.is_file() else {}
    return {**{name: value for name, value in values.items() if value is not None}, **process_env()}


@dataclass(frozen=True, eq=False)
class EvalSettings:
    """What a run of the evals needs beyond a trial's `Settings`: read once, parsed once, passed down.

    `env` is the snapshot it was read from, for the parsers that take a whole mapping (`Settings`, the
    judge's routes, the A/B arms); every other value is a property, parsed the first time it is asked
    for (so a bad value stops the run where the run first needs it, naming the variable)."""

    env: Mapping[str, str]

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> EvalSettings:
        return cls(MappingProxyType(dict(process_env() if env is None else env)))

    def _text(self, name: str) -> str:
        return self.env.get(name, "").strip()

    def _positive_int(self, name: str, default: int) -> int:
        text = self._text(name)
        if not text:
            return default
        if not text.isdigit() or int(text) < 1:
            raise ValueError(f"{name} must be a whole number of at least 1, got {text!r}")
        return int(text)

    @property
    def results_dir(self) -> Path:
        """EVAL_RESULTS_DIR: where the runs' folders are (default `results/`)."""
        return Path(self._text("EVAL_RESULTS_DIR") or DEFAULT_RESULTS_DIR)

    @property
    def run_id(self) -> str | None:
        """EVAL_RUN_ID as set (None: each process chooses one; `Settings` checks its shape)."""
        return self._text("EVAL_RUN_ID") or None

    @property
    def project(self) -> str:
        """EVAL_PROJECT: the Braintrust project of every experiment and dataset."""
        return self.env.get("EVAL_PROJECT") or DEFAULT_PROJECT

    @property
    def braintrust_api_key(self) -> str | None:
        """BRAINTRUST_API_KEY as set (the launcher's word on local mode; a process's login is `_login`'s)."""
        return self.env.get("BRAINTRUST_API_KEY") or None

    @property
    def trials(self) -> str:
        """EVAL_TRIALS as set: a number, `adaptive[:MAX]`, or empty (DEFAULT_TRIALS); `_adaptive.parse_trials`
        parses it with the EVAL_ADAPTIVE_* rates of `env` (braintrust_run/adaptive.py imports the run's modules)."""
        return self.env.get("EVAL_TRIALS", "")

    @cached_property
    def case_ids(self) -> frozenset[str]:
        """EVAL_CASE_IDS: the only cases the run runs (comma-separated ids), or every case when unset
        (the tuning loop runs a split's part this way; `evals._wiring.chosen_cases` checks the ids)."""
        return frozenset(part.strip() for part in self.env.get("EVAL_CASE_IDS", "").split(",") if part.strip())

    @cached_property
    def tune_context(self) -> dict[str, str] | None:
        """EVAL_TUNE_CONTEXT: what a tuning run's child measures (`key=value;...`: the tuning run, the part
        of the split, the incumbent and the candidate), put in its experiments' metadata as `tuning`."""
        text = self._text("EVAL_TUNE_CONTEXT")
        if not text:
            return None
        pairs = [part.partition("=") for part in text.split(";") if part.strip()]
        if any(not sep or not key.strip() for key, sep, _ in pairs):
            raise ValueError(f"EVAL_TUNE_CONTEXT must be key=value pairs split by ';', got {text!r}")
        return {key.strip(): value.strip() for key, _, value in pairs}

    @cached_property
    def floors(self) -> dict[str, float]:
        """EVAL_MIN_PASS: score name -> the least pass rate the run accepts."""
        return parse_floors(self.env.get("EVAL_MIN_PASS", ""))

    @property
    def judge_provider(self) -> str:
        """EVAL_JUDGE_PROVIDER as set (`check_judge_provider` refuses an unknown route; the judge reads `env`)."""
        return self.env.get("EVAL_JUDGE_PROVIDER", "")

    @cached_property
    def shard(self) -> Shard | None:
        """EVAL_SHARD: this process's share of the run (`k/n`), or None."""
        from braintrust_run.shard import parse_shard

        return parse_shard(self.env.get("EVAL_SHARD", ""))

    @property
    def provider_budget(self) -> dict[str, int]:
        """EVAL_PROVIDER_CONCURRENCY: trials talking to one provider at once, this shard's share."""
        from braintrust_run.slots import parse_provider_budget

        return parse_provider_budget(self.env.get("EVAL_PROVIDER_CONCURRENCY", ""), self.shard)

    @property
    def concurrency(self) -> int:
        """EVAL_CONCURRENCY: trials run at once, per experiment."""
        return self._positive_int("EVAL_CONCURRENCY", DEFAULT_CONCURRENCY)

    @cached_property
    def decoy_sweep(self) -> list[int]:
        """EVAL_DECOY_SWEEP: one experiment per decoy count ([] when not sweeping)."""
        return decoy_sweep(self.env.get("EVAL_DECOY_SWEEP", ""))

    @property
    def ab_arms_set(self) -> bool:
        """EVAL_AB_A or EVAL_AB_B is set: an A/B run (`_adaptive.ab_arms` reads both from `env`)."""
        return bool(self._text("EVAL_AB_A") or self._text("EVAL_AB_B"))

    def share_limit(self, name: str) -> float:
        """A share in [0, 1] the gate allows (one of SHARE_LIMITS); a bad value is a configuration error."""
        text = self._text(name)
        if not text:
            return SHARE_LIMITS[name]
        try:
            value = float(text)
        except ValueError:
            value = -1.0
        if not 0 <= value <= 1:
            raise ValueError(f"{name}={text!r} is not a share: use a number from 0 to 1 (e.g. 0.1 for 10%)")
        return value

    @property
    def damage_allowed(self) -> bool:
        """EVAL_ALLOW_MAIN_DAMAGE: whether main changed without approval may pass the gate."""
        text = self._text(ALLOW_DAMAGE).lower()
        if text not in _YES + _NO:
            raise ValueError(f"{ALLOW_DAMAGE}={text!r} is not a switch: use 1 to let main damage pass the gate, or 0")
        return text in _YES

    @property
    def calibration_requested(self) -> bool:
        """EVAL_JUDGE_CALIBRATION: define the judge calibration Eval."""
        return self._text(CALIBRATION_SWITCH).lower() in ("1", "true", "yes", "on")

    @property
    def calibration_judges(self) -> list[str]:
        """EVAL_CALIBRATION_JUDGES: the judge models to calibrate, in order, without repeats ([]: the judge's)."""
        listed = [part.strip() for part in self.env.get("EVAL_CALIBRATION_JUDGES", "").split(",") if part.strip()]
        return list(dict.fromkeys(listed))

    @property
    def calibration_repeats(self) -> int:
        """EVAL_CALIBRATION_REPEATS: how many times each example is judged (2 to 10, default 2)."""
        text = self._text(CALIBRATION_REPEATS)
        if not text:
            return DEFAULT_CALIBRATION_REPEATS
        if not text.isdigit() or not 2 <= int(text) <= MAX_CALIBRATION_REPEATS:
            raise CalibrationConfigError(
                f"{CALIBRATION_REPEATS}={text!r} is not a whole number from 2 to {MAX_CALIBRATION_REPEATS}: the "
                "calibration judges every example at least twice to measure the judge's self-agreement"
            )
        return int(text)

    @property
    def calibration_concurrency(self) -> int:
        """EVAL_CONCURRENCY for the calibration Eval (a bad value is its configuration error)."""
        try:
            return self.concurrency
        except ValueError as error:
            raise CalibrationConfigError(str(error)) from None

    @cached_property
    def chosen_run_id(self) -> str:
        """EVAL_RUN_ID, else a new id chosen once: the same for every experiment of the process."""
        return self.run_id or new_run_id()

    @property
    def calibration_run_id(self) -> str:
        """The calibration's run id (`chosen_run_id`), checked to name a folder."""
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", self.chosen_run_id):
            raise CalibrationConfigError("EVAL_RUN_ID may hold only letters, digits, '_', '.', '-'")
        return self.chosen_run_id

    @property
    def failed_uploads_dir(self) -> str | None:
        """BRAINTRUST_FAILED_PUBLISH_PAYLOADS_DIR: where the SDK keeps the uploads it dropped (the SDK reads it too)."""
        return self.env.get("BRAINTRUST_FAILED_PUBLISH_PAYLOADS_DIR") or None

    @property
    def dataset_label(self) -> str:
        """EVAL_DATASET as an experiment's metadata names it ("bundled" when unset)."""
        return self.env.get("EVAL_DATASET") or "bundled"

    @property
    def ci_branch(self) -> str | None:
        """The branch GitHub Actions names (GITHUB_HEAD_REF, else GITHUB_REF_NAME): CI checkouts are detached."""
        return self.env.get("GITHUB_HEAD_REF") or self.env.get("GITHUB_REF_NAME") or None


@read_once
def current(env: Mapping[str, str]) -> EvalSettings:
    """This process's `EvalSettings`, read once (for what Braintrust calls without arguments)."""
    return EvalSettings.from_env(env)


def check_limits(settings: EvalSettings) -> None:
    """Read every share and switch the gate will read, so a bad one stops the run before its first trial."""
    for name in SHARE_LIMITS:
        settings.share_limit(name)
    _ = settings.damage_allowed
    _ = settings.tune_context
