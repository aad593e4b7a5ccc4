"""The twin: a sandbox ZooKeeper holding a copy of a production tree (``snapshot restore``), with one node per
registered production broker, taking its broker id and rack, so the bridge upgrade, failovers and reassignments
run at production's shape and scale before production does (``up --from-snapshot``,
``rehearse --from-snapshot``). :mod:`.nodes` decides which brokers run and restores the tree into a stack;
:mod:`.cli` adds ``--from-snapshot`` to ``bridgekeeper up``.
"""
