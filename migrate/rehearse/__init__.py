"""``bridgekeeper rehearse``: the two-phase rolling upgrade (roll the binaries at the pinned IBP, then roll again
with the new IBP), rehearsed under live client load with named checks after every step and a report.

Rooms: ``cli`` (flags, exit codes), ``run`` (the run and its step loop), ``host`` (options, and the protocols the
steps see the run through), ``steps`` (rolls, restarts, lockdown), ``drills`` (faults mid-roll, injected with
:mod:`testing.faults`), ``postflight`` (the checks after every step, post-flight, artefacts), ``cluster`` (a stack
it starts or one it attaches to), ``load`` (the client processes' pool) and ``load_worker`` (one client process),
``clients`` (the two admin clients and how their errors are named), ``ledger`` (their writes against ZooKeeper),
``state`` (what ZooKeeper says: canRoll, ISRs), ``observe`` (metrics and controller watch), ``zkrecords`` (who
wrote, from ZooKeeper's transaction log), ``checks``, ``display`` (live view), ``report`` (HTML + JSON). Nothing
here needs Spark (an import-linter contract).
"""
