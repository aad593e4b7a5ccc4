"""The test harness that ships (as ``kazoo.testing`` does): what the test suite, the benchmarks and the rehearsal's
drills share to drive a real cluster, so none of them holds another's code.

What lives here: ZooKeeper session expiry from outside the session's owner (:mod:`.expire`), a running stack seen
from outside (:mod:`.stack`: its controller, metrics and READY lines) and the failover soak
(:mod:`.failover_soak`) behind ``tests/reliability`` and ``bench/failover_soak.py``.

Who may import it: ``tests/`` and ``bench/``. It imports the product, never ``tests`` or ``bench``: a harness the
product ships cannot lean on code that does not.
"""
