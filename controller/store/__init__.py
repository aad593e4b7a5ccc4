"""ZooKeeper stores any node reads and writes, in Kafka's formats and with Kafka's compare-and-set rules:
entity configs and their change notifications, client quotas, SCRAM credentials, ACLs, the broker's own
registration and cluster id, and the pre-2.7 ISR write of a partition leader.

No wire types: functions take and return ``zkmodel`` values and raise errors that carry a Kafka error code,
so the wire handlers, the operator tools in ``migrate`` and the node itself share one implementation.
Modules: :mod:`.entity_configs`, :mod:`.quotas`, :mod:`.scram`, :mod:`.kafka_acls`, :mod:`.registration`,
:mod:`.legacy_isr`, and :mod:`.errors` (an error answer with its Kafka code). Imports ``controller.zk``,
``controller.security`` (the SCRAM credential format) and ``zkmodel``; never ``controller.wire``,
``controller.active``, ``controller.broker`` or kio.
"""
