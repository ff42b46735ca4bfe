"""The REST face: a Neon-shaped API v2. Every route is a function of one ``Call`` (``call``), listed
in the one table in ``routes``; resource bodies are built in ``bodies``."""
