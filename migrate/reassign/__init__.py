"""``bridgekeeper reassign``: the kafka-reassign-partitions equivalent.

Kafka 3.9's flags, JSON files, console text and exit codes (``options``, ``plan_files``, one module per
action: ``generate``, ``execute``, ``verify``, ``cancel``, ``listing``), talking the public admin API
through kafka-python (``admin``, ``client_config``) so it works against Apache Kafka too; the legacy
``--zookeeper`` path of Kafka 2.6-2.8 (``legacy``, writing through ``controller.store``); and what Kafka
never had: waves under a per-broker cap (``waves``, ``progress``), ``--output json`` (``output``) and a
``--generate`` that moves the minimum (``planner``). Pure arithmetic (``throttles``, ``waves``,
``planner``, ``model``) is kept apart from I/O so it is unit-tested without a cluster.
"""
