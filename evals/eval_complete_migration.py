"""Multi-turn: after staging a change, does the model apply it to main only when the user approves
(and exactly as staged), cancel it when they decline, and leave no temporary branch behind?"""

from evals._wiring import define_evals

define_evals("complete_migration", "complete")
