from forkline_es import RunRecorder

recorder = RunRecorder()
run_id = recorder.start_run(entrypoint="examples/minimal.py")

recorder.log_event(run_id, "input", {"prompt": "hello"})
recorder.log_event(run_id, "output", {"result": "world"})

recorder.end_run(run_id, status="success")
