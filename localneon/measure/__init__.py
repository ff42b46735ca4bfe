"""Timings: the operations a trial depends on (``bench``) and the database work it cannot avoid (``least_work``)."""
