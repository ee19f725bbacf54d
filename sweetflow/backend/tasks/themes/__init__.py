"""The task families, one module per theme; `sweetflow.backend.tasks.families` lists them in order."""
