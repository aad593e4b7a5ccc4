"""The Kafka wire protocol, and nothing of ZooKeeper: the asyncio server and its runtime thread, framing and
kio codecs, the hand-framed Envelope and ControlledShutdown, the blocking inter-broker client connection,
the API spec table (:mod:`.apikeys`), dispatch (local handler, forwarding, envelopes, metrics), the
authorization helper, and the handler families in :mod:`.handlers`.

Imports ``controller.security``, ``controller.store`` (through the handlers), ``controller.active.api`` only
of the controller (the handlers call a :class:`~controller.active.api.ControllerApi` the node hands them) and
``zkmodel``; never kazoo, a ZooKeeper session or writer, the controller's own modules, the broker side or the
node — those hand the wire layer what it needs (a forwarder, handlers, a controller, a session for a store).
"""
