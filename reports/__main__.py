from reports.cli import main

raise SystemExit(main())
