from trace_cli.app import run

run()
