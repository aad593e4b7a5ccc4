"""Who may do what: Kafka's ACL authorization, evaluated over ACLs cached from ZooKeeper."""
