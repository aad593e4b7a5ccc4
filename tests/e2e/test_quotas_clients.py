"""Client quotas through kafka-python's raw AlterClientQuotas / DescribeClientQuotas requests (it has no
quota methods; ``_manager.run(_manager.send, ...)`` is its private request path).

Needs QuotaApis registered on the stack's nodes (APIs 48, 49)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from kafka.admin import KafkaAdminClient
from kafka.protocol.admin import AlterClientQuotasRequest, DescribeClientQuotasRequest

from tests.e2e.conftest import RunningStack

pytestmark = pytest.mark.e2e


def send(stack: RunningStack, request: Any) -> Any:
    admin = KafkaAdminClient(bootstrap_servers=stack.bootstrap, request_timeout_ms=30000)
    try:
        return admin._manager.run(admin._manager.send, request)
    finally:
        admin.close()


def alter_request(entity: dict[str, str | None], ops: dict[str, float | None], validate: bool = False) -> Any:
    entry = AlterClientQuotasRequest.EntryData(
        entity=[AlterClientQuotasRequest.EntryData.EntityData(entity_type=t, entity_name=n) for t, n in entity.items()],
        ops=[
            AlterClientQuotasRequest.EntryData.OpData(key=k, value=0.0 if v is None else v, remove=v is None)
            for k, v in ops.items()
        ],
    )
    return AlterClientQuotasRequest(entries=[entry], validate_only=validate)


def describe_request(components: list[tuple[str, int, str | None]], strict: bool = False) -> Any:
    comps = [DescribeClientQuotasRequest.ComponentData(entity_type=t, match_type=m, match=n) for t, m, n in components]
    return DescribeClientQuotasRequest(components=comps, strict=strict)


def described(response: Any) -> dict[tuple[tuple[str, str | None], ...], dict[str, float]]:
    assert response.error_code == 0, response
    return {
        tuple((e.entity_type, e.entity_name) for e in entry.entity): {v.key: v.value for v in entry.values}
        for entry in response.entries
    }


def test_kafka_python_alter_and_describe_quotas(stack: RunningStack) -> None:
    resp = send(stack, alter_request({"user": "e2e-alice", "client-id": "e2e-app"}, {"producer_byte_rate": 4096.0}))
    assert [(e.error_code, e.error_message) for e in resp.entries] == [(0, None)]
    data, _stat = stack.zk.get("/config/users/e2e-alice/clients/e2e-app")
    assert orjson.loads(data) == {"version": 1, "config": {"producer_byte_rate": "4096"}}

    resp = send(stack, alter_request({"client-id": None}, {"request_percentage": 25.5}))
    assert resp.entries[0].error_code == 0
    assert orjson.loads(stack.zk.get("/config/clients/<default>")[0])["config"] == {"request_percentage": "25.5"}

    got = described(send(stack, describe_request([("user", 0, "e2e-alice")])))
    assert got == {(("user", "e2e-alice"), ("client-id", "e2e-app")): {"producer_byte_rate": 4096.0}}
    got = described(send(stack, describe_request([("client-id", 1, None)], strict=True)))
    assert got == {(("client-id", None),): {"request_percentage": 25.5}}

    resp = send(stack, alter_request({"user": "e2e-alice"}, {"producer_byte_rate": 1.5}))
    assert (resp.entries[0].error_code, resp.entries[0].error_message) == (
        42,
        "Configuration producer_byte_rate must be a LONG value",
    )
    resp = send(stack, describe_request([("user", 0, "a"), ("ip", 2, None)]))
    assert resp.error_code == 42 and resp.entries is None

    # removing the last key deletes the entity (and its emptied parents), as Kafka 3.9 does
    resp = send(stack, alter_request({"user": "e2e-alice", "client-id": "e2e-app"}, {"producer_byte_rate": None}))
    assert resp.entries[0].error_code == 0
    assert stack.zk.exists("/config/users/e2e-alice") is None
    assert described(send(stack, describe_request([("user", 0, "e2e-alice")]))) == {}
