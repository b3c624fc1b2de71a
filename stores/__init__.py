"""The imperative shell's disk half: every byte TRACE writes goes through
a module here. Nothing here imports typer or rich."""
