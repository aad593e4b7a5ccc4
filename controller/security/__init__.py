"""Who a client is and what it may do: the Kafka principal and its serde (:mod:`.principal`), SASL PLAIN
and SCRAM servers and JAAS parsing (:mod:`.plain`, :mod:`.scram`), the node's security settings
(:mod:`.settings`), Kafka's ACL authorizer (:mod:`.authorizer`) and the ACL cache it reads, kept from
ZooKeeper watches on the shared watched-cache base (:mod:`.acl_cache`).

Imports ``controller.zk`` (the cache's session and base), ``controller.store`` (ACL znode decoding) and
``zkmodel``; never ``controller.wire``, ``controller.active`` or ``controller.broker``, which all import it.
"""
