"""Write or check the generated files under ``dashboards/``."""

from __future__ import annotations

from pathlib import Path

from observability import alert_tests, alerts, dashboards, recording, recording_tests

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "dashboards"


def generated() -> dict[str, str]:
    """File name under ``dashboards/`` -> the content this package generates."""
    return {
        **dashboards.files(),
        "alerts.yaml": alerts.render(),
        "alerts_test.yaml": alert_tests.render(),
        "recording_rules.yaml": recording.render(),
        "recording_rules_test.yaml": recording_tests.render(),
    }


def stale(out: Path = OUT) -> list[str]:
    """Generated files that are missing or differ from what is committed."""
    return [
        name for name, text in generated().items() if not (out / name).is_file() or (out / name).read_text() != text
    ]


def write(out: Path = OUT) -> list[str]:
    out.mkdir(parents=True, exist_ok=True)
    changed = stale(out)
    for name, text in generated().items():
        if name in changed:
            (out / name).write_text(text)
    return changed
