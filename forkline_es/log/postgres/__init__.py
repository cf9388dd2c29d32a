"""The log on PostgreSQL: the cursor adapter, the schema with its triggers, connections.

Needs the ``postgres`` extra (``pip install 'forkline-es[postgres]'``: psycopg 3).
"""
