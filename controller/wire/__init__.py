"""The Kafka wire protocol: framing, codecs (kio) and the API handlers a node serves."""
