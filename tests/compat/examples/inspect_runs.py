"""Forkline's scripts/inspect_runs.py, as a user would write it: plain sqlite3 on runs.db.

    python inspect_runs.py [--db runs.db]            # list all runs
    python inspect_runs.py [--db runs.db] --run-id ID  # show one run with its events

It reads only the ``runs`` and ``events`` tables of Recording v0 and imports nothing from
forkline or forkline_es: with forkline_es they are views over the log, and this still works.
"""

import argparse
import json
import sqlite3
import sys


def list_runs(conn):
    rows = conn.execute(
        "SELECT run_id, entrypoint, started_at, ended_at, status FROM runs ORDER BY started_at"
    ).fetchall()
    if not rows:
        print("No runs found.")
        return
    for run_id, entrypoint, started_at, ended_at, status in rows:
        print(f"{run_id}  {entrypoint}  {started_at}  {ended_at or '-'}  {status or 'running'}")


def show_run(conn, run_id):
    run = conn.execute("SELECT * FROM runs WHERE run_id = ?", (run_id,)).fetchone()
    if run is None:
        print(f"Run not found: {run_id}")
        return 1
    for key in run.keys():  # noqa: SIM118 - a sqlite3.Row iterates over values
        print(f"{key}: {run[key]}")
    print("events:")
    for event in conn.execute(
        "SELECT event_id, ts, type, payload FROM events WHERE run_id = ? ORDER BY event_id",
        (run_id,),
    ):
        payload = json.loads(event["payload"])
        print(f"  [{event['event_id']}] {event['ts']} {event['type']} {json.dumps(payload, sort_keys=True)}")
    return 0


def main():
    parser = argparse.ArgumentParser(description="Inspect Forkline runs")
    parser.add_argument("--db", default="runs.db")
    parser.add_argument("--run-id")
    args = parser.parse_args()
    conn = sqlite3.connect(args.db)
    conn.row_factory = sqlite3.Row
    if args.run_id:
        return show_run(conn, args.run_id)
    list_runs(conn)
    return 0


if __name__ == "__main__":
    sys.exit(main())
