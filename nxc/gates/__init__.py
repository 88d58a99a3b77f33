"""Running gates: isolation in child processes, the runner, reports and the pytest plugin."""
