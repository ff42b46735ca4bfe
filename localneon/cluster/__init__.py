"""The PostgreSQL cluster under everything: the embedded server (``pg``), who uses it (``leases``),
and the advisory locks that keep physical objects and catalog rows in step (``locks``)."""
