"""Node configuration from environment variables, the way Apache Kafka's official image reads them (KIP-975,
``docker/examples/README.md``): a variable ``KAFKA_<NAME>`` sets the property whose name, upper-cased with
``.`` written ``_``, ``_`` written ``__`` and ``-`` written ``___``, is ``<NAME>``. So
``KAFKA_INTER_BROKER_PROTOCOL_VERSION`` sets ``inter.broker.protocol.version`` and
``KAFKA_BRIDGEKEEPER_METRICS_PORT`` sets ``bridgekeeper.metrics.port``. (Confluent's images swap the ``-``
and ``_`` encodings; a key with either is rare in a broker's configuration.)

The image's own variables (JVM and log4j options) are not properties there, and are not read as properties here
either. Two of them mean here what they mean there: ``KAFKA_LOG4J_ROOT_LOGLEVEL`` and ``KAFKA_LOG4J_LOGGERS`` set
the node's log levels (:func:`controller.logs.levels_from_env`, read by ``node --config-from-env``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from controller.config.errors import ConfigError

PREFIX = "KAFKA_"
#: Variables Kafka's image reads for itself, never as server properties (the log4j levels: see controller.logs).
NOT_PROPERTIES = frozenset(
    {
        "KAFKA_VERSION",
        "KAFKA_HOME",
        "KAFKA_HEAP_OPTS",
        "KAFKA_OPTS",
        "KAFKA_JMX_OPTS",
        "KAFKA_JMX_HOSTNAME",
        "KAFKA_JMX_PORT",
        "KAFKA_JVM_PERFORMANCE_OPTS",
        "KAFKA_GC_LOG_OPTS",
        "KAFKA_LOG4J_OPTS",
        "KAFKA_LOG4J_ROOT_LOGLEVEL",
        "KAFKA_LOG4J_LOGGERS",
        "KAFKA_TOOLS_LOG4J_LOGLEVEL",
        "KAFKA_DEBUG",
    }
)
_NAME = re.compile(r"[A-Za-z0-9_]+")


def property_name(variable: str) -> str:
    """``KAFKA_LISTENER_SECURITY_PROTOCOL_MAP`` -> ``listener.security.protocol.map``; ConfigError naming
    the variable when it cannot be a property name."""
    body = variable[len(PREFIX) :] if variable.startswith(PREFIX) else ""
    if not body or not _NAME.fullmatch(body):
        raise ConfigError(f"environment variable {variable}: not KAFKA_ followed by letters, digits and underscores")
    key = body.replace("___", "-").replace("__", "\0").replace("_", ".").replace("\0", "_").lower()
    if key.startswith(".") or key.endswith(".") or ".." in key:
        raise ConfigError(f"environment variable {variable}: maps to {key!r}, which has an empty name segment")
    return key


def properties_from_env(environ: Mapping[str, str]) -> dict[str, str]:
    """Every ``KAFKA_*`` variable of ``environ`` (but the image's own) as a property; sorted, so that two
    variables naming one property (``KAFKA_A_B`` and ``kafka_a_b`` cannot both exist, but a typo can) fail the
    same way every time."""
    out: dict[str, str] = {}
    origin: dict[str, str] = {}
    for variable in sorted(environ):
        if not variable.startswith(PREFIX) or variable in NOT_PROPERTIES:
            continue
        key = property_name(variable)
        if key in out:
            raise ConfigError(f"environment variables {origin[key]} and {variable} both set {key}")
        out[key], origin[key] = environ[variable], variable
    return out
