"""Reports: one command regenerates every figure and table (registry, persisted units,
local or Dask executors, progress, the HTML/Markdown report)."""

__all__: list[str] = []  # the package offers its modules (registry, schema, store, drawing, verdict), no names
