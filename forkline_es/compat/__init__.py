"""The Forkline-compatible recorder over the engine, and the importer of Forkline's runs.db.

Nothing is re-exported here: ``compat.views`` is a projector the store folds (below
``store``), while ``recorder`` and ``importer`` are built on the store (above it); the
public names are ``forkline_es.RunRecorder``, ``import_forkline`` and ``ImportReport``.
"""
