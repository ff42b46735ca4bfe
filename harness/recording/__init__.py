"""What a trial leaves behind: the record's shape, the results store, redaction, the finished trials."""
