import sys

from trace_cli.entry import main

sys.exit(main())
