"""`python -m services.cli`: the `bura` command line."""

from services.cli.main import main

raise SystemExit(main())
