"""The resident server (`trace serve`): one process that has imported
TRACE and built its tokenizer once, and forks a fresh child per command.

A runtime starts `trace context` before every model call and a hook
starts `trace` on every turn; each cold process spends ~0.3 s importing
and building before it does ~0.06 s of work. With the server running, the
`trace` a script starts hands its argv, working directory, environment and
standard streams (the file descriptors themselves) to the server and waits
for the exit code, so the command runs as if it ran there, minus the
start-up. No server, a stale one, or a terminal on stdin: the command runs
in its own process as always."""
