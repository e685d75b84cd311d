"""Lets ``python -m sl1conf`` (and ``python -m sl1conf.conformance``) run the command line."""

from sl1conf.conformance.cli import main

raise SystemExit(main())
