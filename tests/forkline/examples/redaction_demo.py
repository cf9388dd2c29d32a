"""Secrets never reach the database (written from Forkline's docs)."""

from forkline import RunRecorder
from forkline.core.redaction import RedactionAction, RedactionPolicy, RedactionRule

recorder = RunRecorder(db_path="runs.db")
run_id = recorder.start_run(entrypoint="redaction_demo.py")
recorder.log_event(
    run_id,
    "tool_call",
    {
        "url": "https://api.example.com",
        "api_key": "sk-secret123456789",
        "headers": {"Authorization": "Bearer abc123"},
    },
)
recorder.end_run(run_id)
print(recorder.get_events(run_id)[0]["payload"])

custom = RedactionPolicy(
    rules=[RedactionRule(action=RedactionAction.MASK, key_pattern="card", replacement="***")]
)
print(custom.redact("input", {"card_number": "4111", "amount": 5}))
