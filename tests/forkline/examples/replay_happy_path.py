"""Record a run with the Tracer, then replay it: every step matches (written from Forkline's docs)."""

from forkline import ReplayEngine, ReplayPolicy, ReplayStatus, SQLiteStore, Tracer

store = SQLiteStore("forkline.db")
with Tracer(store=store, run_id="happy-1") as tracer:
    with tracer.step("plan"):
        tracer.record_event("input", {"goal": "book a table"})
        tracer.record_event("output", {"plan": ["search", "reserve"]})
    with tracer.step("search"):
        tracer.record_event("tool_call", {"name": "search", "args": {"q": "pizza"}, "result": ["Luigi's"]})
        tracer.record_event("output", {"choice": "Luigi's"})

engine = ReplayEngine(store)
result = engine.replay("happy-1", policy=ReplayPolicy.strict())
print(result.status is ReplayStatus.MATCH, result.summary())


def executor(step, ctx):
    """Replays a step from the recording: every tool result comes from ctx, never live."""
    return ctx.get_step(step.idx)


replayed = engine.replay("happy-1", executor=executor)
print(replayed.is_match(), replayed.steps_compared, replayed.total_events_compared)
print(engine.validate_run("happy-1").to_dict())
