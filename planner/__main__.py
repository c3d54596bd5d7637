from planner.cli.main import main

raise SystemExit(main())
