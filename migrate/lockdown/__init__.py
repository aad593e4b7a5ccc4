"""``bridgekeeper lockdown``: ZooKeeper ACLs so that only the controller's identity may change Kafka's
metadata, while everyone keeps READ and brokers keep what they must still write themselves.

``zkmodel.znode_acls`` says which ACL each path should have (pure, shared with the nodes, which create new
znodes with it); ``tool`` plans, applies (after saving the previous
ACLs), verifies and reverts, reading through the session and writing through ``controller.store.znode_acls``.
"""
