"""Two recordings of one workflow that part at a tool result (written from Forkline's docs)."""

import json

from forkline import ReplayEngine, SQLiteStore, Tracer, find_first_divergence

store = SQLiteStore("forkline.db")
for run_id, weather in (("base", "sunny"), ("new", "rain")):
    with Tracer(store=store, run_id=run_id) as tracer:
        with tracer.step("plan"):
            tracer.record_event("input", {"city": "Paris"})
        with tracer.step("forecast"):
            tracer.record_event("input", {"city": "Paris"})
            tracer.record_event("output", {"weather": weather, "ts": run_id})
        with tracer.step("answer"):
            tracer.record_event("output", {"text": f"It is {weather}"})

engine = ReplayEngine(store)
result = engine.compare_runs("base", "new")
print(result.status.value, result.is_match())
print(result.summary())
point = result.divergence
print(
    point.step_idx,
    point.step_name,
    point.event_idx,
    point.divergence_type,
    [str(d) for d in point.field_diffs],
)
print(json.dumps(result.to_dict(), sort_keys=True))

first = find_first_divergence(store.load_run("base"), store.load_run("new"), window=5, context_size=1)
print(first.status, first.explanation, first.last_equal_idx)
print(json.dumps(first.output_diff))
