"""The test harness that ships (as ``kazoo.testing`` does): what the test suite, the benchmarks and the rehearsal's
drills share to drive a real cluster, so none of them holds another's code.

What lives here: the fault injector (:mod:`.faults`: one function per fault, each named for what it does, used by
the drills and the soak alike), ZooKeeper session expiry from outside the session's owner (:mod:`.expire`), a
running stack seen from outside (:mod:`.stack`: its controller, metrics and READY lines), and the failover soak
behind ``tests/reliability`` and ``bench/failover_soak.py`` (:mod:`.failover_soak`, with its records in
:mod:`.soak_model` and its checks in :mod:`.soak_checks`).

Who may import it: ``tests/``, ``bench/`` and, of the product, only :mod:`migrate.rehearse.drills` (for
:mod:`.faults`; the import-linter contract names that one arrow). It imports the product, never ``tests`` or
``bench`` (a contract too): a harness the product ships cannot lean on code that does not.
"""
