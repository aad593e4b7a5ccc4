"""Config entity naming: Kafka's Sanitizer and entity paths."""

import pytest

from zkmodel import paths
from zkmodel.configs import desanitize, entity_path, sanitize, user_client_entity_path


@pytest.mark.parametrize(
    ("name", "sanitized"),
    [
        ("alice", "alice"),
        ("user 1", "user%201"),
        ("a*b", "a%2Ab"),
        ("a+b", "a%2Bb"),
        ("CN=x,O=y", "CN%3Dx%2CO%3Dy"),
        ("é", "%C3%A9"),
        ("a.b-c_d", "a.b-c_d"),
    ],
)
def test_sanitize_matches_kafka(name: str, sanitized: str) -> None:
    assert sanitize(name) == sanitized
    assert desanitize(sanitized) == name


def test_desanitize_reads_plus_as_space_and_rejects_bad_escapes() -> None:
    assert desanitize("a+b") == "a b"
    for bad in ("%", "%4", "%zz", "%C3"):
        with pytest.raises(ValueError):
            desanitize(bad)


def test_entity_paths() -> None:
    assert paths.entity_config("topics", "orders") == "/config/topics/orders"
    assert paths.entity_config("brokers", "<default>") == "/config/brokers/<default>"
    assert paths.entity_config("users", "CN=alice") == "/config/users/CN%3Dalice"
    assert paths.entity_config("ips", "::1") == "/config/ips/%3A%3A1"
    assert user_client_entity_path("<default>", "app 1") == "users/<default>/clients/app%201"
    with pytest.raises(ValueError, match="unknown config entity type"):
        entity_path("groups", "g")
