"""Node configuration: a Kafka broker style properties file, command-line overrides and ``KAFKA_*`` environment
variables, read as a Kafka 3.9 broker in ZooKeeper mode reads them (sources at 3.9.0-rc3).

Modules, one concern each:

* :mod:`.properties`: the ``.properties`` codec, ``java.util.Properties`` load and store;
* :mod:`.values`: configured values as ``ConfigDef.parseType`` reads them (types, trimming, lists);
* :mod:`.keys`: the key registry (names, named defaults, the known keys);
* :mod:`.listeners`: listeners, advertised listeners, the security protocol map, the inter-broker listener;
* :mod:`.zookeeper`: ``zookeeper.connect``;
* :mod:`.security`: super users, SASL, TLS per listener, ZooKeeper digest identities;
* :mod:`.tls`: the ``ssl.*`` and ``zookeeper.ssl.*`` keys into checked TLS settings;
* :mod:`.env`: ``KAFKA_*`` environment variables as properties (Kafka's image convention);
* :mod:`.node`: :class:`NodeConfig`, assembled and validated from all of the above;
* :mod:`.errors`: :class:`ConfigError`, worded like Kafka's ``ConfigException``.

This package re-exports the entry points for loading a node's configuration; anything else is imported from
its module. Imports ``controller.security`` (SASL, TLS and digest settings) and ``zkmodel``; nothing of the
node's runtime (``controller.zk``, ``controller.wire``, ``controller.active``, ``controller.broker``).
"""

from controller.config.errors import ConfigError
from controller.config.node import NodeConfig, config_from_properties, load_config, parse_overrides

__all__ = ["ConfigError", "NodeConfig", "config_from_properties", "load_config", "parse_overrides"]
