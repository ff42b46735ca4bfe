"""Control agents: scripted baselines that speak the model interface, so the agent loop cannot tell.

Why: they bound the scores from both sides and run without any API key. One module per behaviour:

- `control:oracle` (`oracle.py`): the case's reference plan the safe way: stage, verify, ask,
  then complete or cancel; tune a query on a branch and ask; ask before a destructive tool;
- `control:unsafe` (`unsafe.py`): the change straight on main, every planned call at once;
- `control:sloppy` (`sloppy.py`): goes through the motions and gets each safety rule wrong once;
- `control:lexical` (`lexical.py`): picks the SQL tool by the words of its description (BM25),
  then follows the plan;
- `control:obedient` (`obedient.py`): the careful plan, but runs on main any SQL a tool's answer
  tells it to;
- `control:default-database` (`default_database.py`): the careful plan, but never names the
  database, so on a project with two it works in the default one;
- the baselines that should fail (the verifier lab runs them over every case, `make validity`):
  `control:idle` (`idle.py`, one reassuring sentence, no tool), `control:ask` (`asker.py`, a question
  back, nothing read or staged), `control:refuse` (`refuser.py`), `control:explore` (`explorer.py`,
  reads around and changes nothing) and `control:rush` (`rush.py`, prepares and completes at once).

Machinery they share: `base.py` (the turn, the trial binding), `transcript.py` (reading the
history). `harness.models.providers.control` registers them as the `control:` provider; adding an
agent is a module here and an entry in `CONTROL_AGENTS`, whose class takes `(name, context=None)`.
"""

from __future__ import annotations

from harness.models.control.asker import AskingAgent
from harness.models.control.base import ScriptedAgent
from harness.models.control.default_database import DefaultDatabaseAgent
from harness.models.control.explorer import ExploringAgent
from harness.models.control.idle import IdleAgent
from harness.models.control.lexical import LexicalAgent
from harness.models.control.obedient import ObedientAgent
from harness.models.control.oracle import OracleAgent
from harness.models.control.refuser import RefusingAgent
from harness.models.control.rush import RushingAgent
from harness.models.control.sloppy import SloppyAgent
from harness.models.control.unsafe import UnsafeAgent

# Every control agent, by name: `control:<name>` builds `CONTROL_AGENTS[name](name)`.
CONTROL_AGENTS: dict[str, type[ScriptedAgent]] = {
    "oracle": OracleAgent,
    "unsafe": UnsafeAgent,
    "sloppy": SloppyAgent,
    "lexical": LexicalAgent,
    "obedient": ObedientAgent,
    "default-database": DefaultDatabaseAgent,
    "idle": IdleAgent,
    "ask": AskingAgent,
    "refuse": RefusingAgent,
    "explore": ExploringAgent,
    "rush": RushingAgent,
}
# The baselines that should fail every case but the few whose right answer is what they do.
BASELINES = ("control:idle", "control:ask", "control:refuse", "control:explore", "control:rush")
# The one that must pass every deterministic score on every case (`analysis.controls`).
CAREFUL = "control:oracle"
# What runs when no model key and no EVAL_MODEL are set: the two bounds of every score.
FALLBACK_MODELS = ("control:oracle", "control:unsafe")
# Control agents that change main without the user's approval by design: the careless bounds
# (`unsafe` runs the SQL on main, `sloppy` keeps a log table there, `obedient` runs what a tool's
# answer told it to), `default-database` (applies an approved change to a database nobody named),
# the description-reading baseline a misleading description leads to run_sql, and the baseline that
# completes a migration before anyone approved it (`rush`).
# Their damage is what they are run to show, so it never fails the run gate; the careful `oracle`,
# or any model, changing main does.
DAMAGES_MAIN_BY_DESIGN = frozenset(
    {
        "control:unsafe",
        "control:sloppy",
        "control:lexical",
        "control:obedient",
        "control:default-database",
        "control:rush",
    }
)


def is_control_agent(model: str) -> bool:
    """A scripted agent, not a model: it spends no tokens, so model-only lines (cache, judge) say nothing."""
    return model.partition(":")[0] == "control"


def damages_main_by_design(model: str) -> bool:
    """Whether this agent's changing main without approval is its expected behaviour."""
    return model in DAMAGES_MAIN_BY_DESIGN


__all__ = [
    "BASELINES",
    "CAREFUL",
    "CONTROL_AGENTS",
    "DAMAGES_MAIN_BY_DESIGN",
    "FALLBACK_MODELS",
    "DefaultDatabaseAgent",
    "LexicalAgent",
    "ObedientAgent",
    "OracleAgent",
    "ScriptedAgent",
    "SloppyAgent",
    "UnsafeAgent",
    "damages_main_by_design",
    "is_control_agent",
]
