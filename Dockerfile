# bridgekeeper node image: `bridgekeeper node`, configured from KAFKA_* environment variables the way Kafka's
# own image is (KAFKA_INTER_BROKER_PROTOCOL_VERSION -> inter.broker.protocol.version). Used by compose.yaml.
# The base is pinned to one Python release; raise it deliberately (tests/deploycheck.py refuses a moving tag).
FROM python:3.11.16-slim-bookworm

LABEL org.opencontainers.image.title="bridgekeeper" \
      org.opencontainers.image.description="Kafka-compatible, ZooKeeper-backed bridge-release control plane" \
      org.opencontainers.image.licenses="Apache-2.0"

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /src
COPY pyproject.toml README.md ./
COPY zkmodel ./zkmodel
COPY controller ./controller
COPY migrate ./migrate
COPY observability ./observability
COPY testing ./testing
RUN pip install --no-cache-dir . \
    && rm -rf /src \
    && useradd --system --uid 10001 --user-group --no-create-home --shell /usr/sbin/nologin bridgekeeper

WORKDIR /
USER bridgekeeper

# 9092: the usual first listener; 9404: Prometheus metrics (KAFKA_BRIDGEKEEPER_METRICS_PORT).
EXPOSE 9092 9404
# HEALTH CHECK from the same KAFKA_* variables as the node: its first listener (with that listener's TLS
# settings) answers ApiVersions, and its ZooKeeper session has not been lost for longer than the session timeout.
HEALTHCHECK --interval=10s --timeout=10s --start-period=30s --retries=5 \
    CMD ["bridgekeeper", "health", "--config-from-env", "--timeout", "4"]
ENTRYPOINT ["bridgekeeper", "node", "--config-from-env"]
