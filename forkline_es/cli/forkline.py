"""`forkline-es forkline ...`: Forkline 0.5.0's command line (`run`, `list`, `replay`, `diff`,
`ci ...`) with its options, output and exit codes, over `forkline_es.forkline`."""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from forkline_es.cli._common import refusals
from forkline_es.forkline.ci import commands
from forkline_es.forkline.cli import render
from forkline_es.forkline.storage.recorder import RunRecorder

__all__ = ["COMMANDS"]

_DB = click.option("--db", default="runs.db", show_default=True, help="The database (Forkline's runs.db).")
_REMAINDER: dict[str, Any] = {"ignore_unknown_options": True, "allow_interspersed_args": False}


def _recorder(db: str, redact_config: str | None = None) -> RunRecorder:
    if redact_config:
        return RunRecorder.with_config(db_path=db, redact_config_path=redact_config)
    return RunRecorder(db_path=db)


def _args(script_args: tuple[str, ...]) -> list[str]:
    return list(script_args[1:] if script_args[:1] == ("--",) else script_args)


@click.group("forkline")
def forkline() -> None:
    """Forkline 0.5.0's commands (run, list, replay, diff, ci) on this engine.

    Same options, output and exit codes as the `forkline` command; the runs are runs of the
    engine, so every other command works on them too (docs/forkline.md).
    """


@forkline.command("run", context_settings=_REMAINDER)
@_DB
@click.option("--redact-config", default=None, help="A redaction config file (YAML or JSON).")
@click.argument("script")
@click.argument("script_args", nargs=-1, type=click.UNPROCESSED)
def run_command(db: str, redact_config: str | None, script: str, script_args: tuple[str, ...]) -> None:
    """Run the Python SCRIPT as a recorded run and print its run_id; exits with the script's status.

    The script gets FORKLINE_RUN_ID and FORKLINE_DB, so it can log events to the run.
    """
    if not os.path.isfile(script):
        click.echo(f"Error: file not found: {script}", err=True)
        sys.exit(2)
    extra = {"FORKLINE_REDACT_CONFIG": redact_config} if redact_config else {}
    with refusals(), _recorder(db, redact_config) as recorder:
        run_id, code = commands.run_script(
            recorder, db, script, _args(script_args), offline=False, extra_env=extra
        )
    if code == -1:
        sys.exit(1)
    click.echo(render.render_run_result(run_id))
    if code != 0:
        sys.exit(code)


@forkline.command("list")
@_DB
@click.option("--limit", type=int, default=None, help="At most this many runs.")
@click.option("--json", "as_json", is_flag=True, help="Output as a JSON array.")
def list_command(db: str, limit: int | None, as_json: bool) -> None:
    """The runs, newest first."""
    with refusals(), _recorder(db) as recorder:
        runs = recorder.list_runs(limit=limit)
    click.echo(render.render_list_json(runs) if as_json else render.render_list_table(runs))


@forkline.command("replay")
@_DB
@click.argument("run_id")
@click.option("--json", "as_json", is_flag=True, help="Output as JSON.")
def replay_command(db: str, run_id: str, as_json: bool) -> None:
    """A recorded run's summary: status, duration and events by type."""
    with refusals(), _recorder(db) as recorder:
        run = recorder.get_run(run_id)
        events = [] if run is None else recorder.get_events(run_id)
    if run is None:
        click.echo(f"Error: run '{run_id}' not found", err=True)
        sys.exit(2)
    click.echo(
        render.render_replay_json(run, events) if as_json else render.render_replay_summary(run, events)
    )


def _event_diff(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> dict[str, Any]:
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if (x["type"], x["payload"]) != (y["type"], y["payload"]):
            old, new = (
                {"type": x["type"], "payload": x["payload"]},
                {"type": y["type"], "payload": y["payload"]},
            )
            return {"identical": False, "divergence_index": i, "old": old, "new": new}
    if len(a) != len(b):
        return {
            "identical": False,
            "divergence_index": min(len(a), len(b)),
            "reason": "different_event_count",
        }
    return {"identical": True}


@forkline.command("diff")
@_DB
@click.argument("run_a")
@click.argument("run_b")
@click.option("--format", "fmt", type=click.Choice(["pretty", "json"]), default="pretty", show_default=True)
@click.option("--first-divergence", is_flag=True, default=True, help="Stop at the first divergence (always).")
def diff_command(db: str, run_a: str, run_b: str, fmt: str, first_divergence: bool) -> None:
    """RUN_B's events against RUN_A's, to the first that differs; exit 1 when they differ."""
    with refusals(), _recorder(db) as recorder:
        for run_id in (run_a, run_b):
            if recorder.get_run(run_id) is None:
                click.echo(f"Error: run '{run_id}' not found", err=True)
                sys.exit(2)
        events_a, events_b = recorder.get_events(run_a), recorder.get_events(run_b)
    diff = {
        **_event_diff(events_a, events_b),
        "total_events_a": len(events_a),
        "total_events_b": len(events_b),
    }
    shown = render.render_diff_json if fmt == "json" else render.render_diff_pretty
    click.echo(shown(diff, run_a, run_b))
    if not diff["identical"]:
        sys.exit(1)


@forkline.group("ci", invoke_without_command=True)
@click.pass_context
def ci(ctx: click.Context) -> None:
    """CI commands: record baselines, check artifacts, and fail builds on behaviour diffs.

    Exit codes: 0 success, 1 diff, 2 usage, 3 replay failed, 4 offline violation,
    5 artifact error, 6 internal error.
    """
    if ctx.invoked_subcommand is None:
        click.echo(ctx.get_help())
        sys.exit(1)


_FORMAT = click.option(
    "--format", "fmt", type=click.Choice(["json", "text"]), default="text", show_default=True
)
_FAIL_ON = click.option(
    "--fail-on", type=click.Choice(["any", "first-divergence", "semantic"]), default="any", show_default=True
)


@ci.command("record", context_settings=_REMAINDER)
@click.option("--entrypoint", required=True, help="The Python script to run.")
@click.option("--out", required=True, help="Where to write the artifact JSON.")
@click.option("--offline", is_flag=True, envvar="FORKLINE_OFFLINE", help="Block the network in the script.")
@click.argument("script_args", nargs=-1, type=click.UNPROCESSED)
def ci_record(entrypoint: str, out: str, offline: bool, script_args: tuple[str, ...]) -> None:
    """Run ENTRYPOINT and write its run as a normalized, committable artifact."""
    sys.exit(commands.ci_record(entrypoint, out, offline=offline, script_args=_args(script_args)))


@ci.command("replay")
@click.option("--artifact", required=True, help="The artifact JSON file.")
@click.option("--strict", is_flag=True, help="Also refuse empty tool_call and output payloads.")
def ci_replay(artifact: str, strict: bool) -> None:
    """Check an artifact file offline and print its summary."""
    sys.exit(commands.ci_replay(artifact, strict=strict))


@ci.command("diff")
@click.option("--expected", required=True, help="The baseline artifact.")
@click.option("--actual", required=True, help="The new artifact.")
@_FORMAT
@_FAIL_ON
def ci_diff(expected: str, actual: str, fmt: str, fail_on: str) -> None:
    """Diff two artifacts' normalized events; exit 1 on a difference."""
    sys.exit(commands.ci_diff(expected, actual, output_format=fmt, fail_on=fail_on))


@ci.command("check", context_settings=_REMAINDER)
@click.option("--entrypoint", required=True, help="The Python script to run.")
@click.option("--expected", required=True, help="The baseline artifact.")
@click.option("--offline/--online", default=True, show_default=True, help="Block the network in the script.")
@_FORMAT
@_FAIL_ON
@click.argument("script_args", nargs=-1, type=click.UNPROCESSED)
def ci_check(
    entrypoint: str, expected: str, offline: bool, fmt: str, fail_on: str, script_args: tuple[str, ...]
) -> None:
    """Record ENTRYPOINT now and diff it against the baseline; exit 1 when behaviour changed."""
    code = commands.ci_check(
        entrypoint,
        expected,
        offline=offline,
        output_format=fmt,
        fail_on=fail_on,
        script_args=_args(script_args),
    )
    sys.exit(code)


@ci.command("normalize")
@click.argument("artifact")
@click.option("--out", default=None, help="Write here instead of in place.")
def ci_normalize(artifact: str, out: str | None) -> None:
    """Replace clocks, drop machine metadata and order events in an artifact file."""
    sys.exit(commands.ci_normalize(artifact, out_path=out))


COMMANDS: list[click.Command] = [forkline]
