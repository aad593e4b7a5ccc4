"""What runs only on the elected controller.

The controller the node constructs (:mod:`.controller`), its event manager (:mod:`.event_manager`, Kafka's
single controller thread, one status line per step), its processor (:mod:`.processor`) and watch handlers
(:mod:`.watch_handlers`), its events,
the controller election (:mod:`.controller_election`: create ``/controller``, bump ``/controller_epoch``),
the failover load, the in-memory context, topic creation and deletion, KIP-455 reassignment, leadership
and ISR changes, Kafka's partition leader election algorithms (:mod:`.leader_election`), partition state
changes and the ``/feature`` znode (:mod:`.feature`). Every write goes through
``controller.zk.fenced_writer`` but the controller election's, which creates the fence, and the
``/feature`` znode's, which Kafka writes unfenced too.

Imports ``controller.zk``, ``controller.store`` and ``zkmodel``; never ``controller.wire`` (handlers call
in here, not the other way round). The wire layer imports only :mod:`.api` of this package: the
``ControllerApi`` Protocol it calls and the plain values that cross it.
"""
