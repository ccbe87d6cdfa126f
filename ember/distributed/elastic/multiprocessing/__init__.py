"""``ember.distributed.elastic.multiprocessing``: holds ``errors``, the failure reports of
ranks started by ``python -m ember.distributed.run`` (the launcher starts the ranks itself,
through ``mpiexec`` or as local processes)."""
