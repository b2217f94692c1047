"""A validation set of posteriordb posteriors written as NumPyro models (``validation/README.md``).

``validation.reference`` reads the committed reference summaries, ``validation.models`` holds
the models and their registry, ``validation.harness`` runs them through ``smi.numpyro.fit``.
"""
