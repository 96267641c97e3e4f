"""Reports: one command regenerates every figure and table (registry, persisted units,
local or Dask executors, progress, the HTML/Markdown report)."""
