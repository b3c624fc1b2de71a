"""The functional core: pure functions, events in, events out. No disk, no
clock, no network; nothing here imports typer or rich."""
