"""A trial's life: the trial itself, the process-wide runner Braintrust tasks share, signals, and who owns what."""
