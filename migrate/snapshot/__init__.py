"""``bridgekeeper snapshot``: a cluster's metadata as rows (one per znode: path, data, full Stat, ACL), read
live through the multiRead reader (``export``) or offline from ZooKeeper's own snapshot and transaction-log
files (``parse``), and checked with zkmodel (``check``).

``jute`` reads ZooKeeper's binary records from a stream with file offsets for every error; ``files`` reads
snapshot and log files (plain, gzip, snappy-java) and verifies their checksums; ``replay`` applies logged
transactions to a parsed tree as ZooKeeper's DataTree does; ``rows`` is the row shape and its Parquet /
JSON-lines writers.
"""
