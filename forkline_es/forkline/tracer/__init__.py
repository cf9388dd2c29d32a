"""``forkline.tracer``: steps and events recorded through the step store."""

from forkline_es.forkline.tracer.tracer import NoActiveStep, StepScope, Tracer

__all__ = ["NoActiveStep", "StepScope", "Tracer"]
