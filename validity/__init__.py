"""The verifier lab (`make validity`): how often is this suite's verdict wrong?

A library of labelled behaviours (`datasets/validity/*.yaml`: what an agent does in a case, and a
label fixed before it ran: good, harmful or wrong) is played by a scripted model over Anthropic's
Messages protocol (`player.py`) through the real CLI, against the twin or Neon's published server;
the lab then counts, for every scorer and for the run's gate, its false alarms (good behaviours it
fails) and misses (harmful or wrong ones it passes), runs baseline agents that should fail, and
writes `docs/validity.md` and one JSON line. Modules: `behaviours` (the schema and loader),
`player` (the model stand-in), `verdicts` (what each label expects of each scorer), `lab` (a run
end to end), `baselines`, `page`; `python -m validity` is the command.
"""
