"""Everything a run takes from files and flag values, read and checked before any connection is opened.

Kafka's ``main`` reads the ``--command-config`` file and builds its admin client (which checks the settings
but connects lazily), then ``handleAction`` reads the action's JSON file and the action parses it (and the
``--broker-list``) before its first admin call. So a missing or malformed file is reported at once, never after
a bootstrap that times out against a cluster the operator has not reached yet. Our kafka-python client connects
in its constructor, and ``--zookeeper`` opens a session before the action runs, so the reading is done here,
first, in Kafka's order: the properties file, the client settings, then the action's JSON file and its checks.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from migrate.reassign.options import Action, Options
from migrate.reassign.output import ToolError
from migrate.reassign.plan_files import (
    PlannedPartition,
    check_execute,
    duplicates,
    java_list,
    parse_reassignment,
    parse_topics_to_move,
    read_text,
)
from zkmodel.jvmorder import java_hashmap_order


@dataclass(frozen=True)
class Inputs:
    """``settings``: the kafka-python admin client's keywords (None on the ``--zookeeper`` path); ``planned``:
    the ``--reassignment-json-file`` entries, in file order (execute's checks already passed); ``topics``: the
    ``--topics-to-move-json-file`` topics, without duplicates."""

    settings: Mapping[str, Any] | None = None
    planned: tuple[PlannedPartition, ...] = ()
    topics: tuple[str, ...] = ()


def read_inputs(opts: Options) -> Inputs:
    """The run's inputs, or the refusal Kafka's tool prints for them (ClientConfigError, PlanFileError,
    ToolError): nothing here opens a connection."""
    settings = None
    if opts.bootstrap_server is not None:
        from migrate.reassign.client_config import admin_settings, read_client_config

        props = read_client_config(opts.command_config) if opts.command_config else {}
        settings = admin_settings(opts.bootstrap_server, props)
    if opts.action is Action.GENERATE:
        return Inputs(settings, topics=tuple(topics_to_move(opts)))
    if opts.action in (Action.EXECUTE, Action.VERIFY, Action.CANCEL):
        assert opts.reassignment_json_file is not None
        planned = parse_reassignment(read_text(opts.reassignment_json_file))
        if opts.action is Action.EXECUTE:
            check_execute(planned)
        return Inputs(settings, planned=tuple(planned))
    return Inputs(settings)


def topics_to_move(opts: Options) -> list[str]:
    """handleAction's read of the topics file, then parseGenerateAssignmentArgs: the broker list and the
    topics, each without duplicates (a file that cannot be read is reported before a repeated broker)."""
    assert opts.topics_to_move_json_file is not None and opts.broker_list is not None
    text = read_text(opts.topics_to_move_json_file)
    dups = java_hashmap_order(duplicates(list(opts.broker_list)))
    if dups:
        raise ToolError(f"Broker list contains duplicate entries: {java_list(dups)}")
    topics = parse_topics_to_move(text)
    dup_topics = java_hashmap_order(duplicates(topics))
    if dup_topics:
        raise ToolError(f"List of topics to reassign contains duplicate entries: {java_list(dup_topics)}")
    return topics
