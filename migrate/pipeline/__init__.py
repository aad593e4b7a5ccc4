"""The PySpark pipeline over ZooKeeper snapshots (readiness reports, movement-minimal reassignment plans).

It runs on Spark executors that have neither ZooKeeper nor a node, so it may import ``zkmodel`` (pure data)
and nothing else of ours: an import-linter contract in ``pyproject.toml`` holds it to that.
"""
