"""The node process: broker front-end and controller candidate, plus the local stack that runs it."""
