"""Agent runtimes plugged into TRACE: their settings files edited to run
`trace hooks run …` (install/uninstall), and what those hook commands do
with the payloads the agents send (capture and re-injection)."""
