"""One metadata image per node (:mod:`.snapshot`): what the broker serves and a standby controller loads."""
