"""Statistics over many trials: what a single average hides (uncertainty, consistency, unscorable trials)."""
