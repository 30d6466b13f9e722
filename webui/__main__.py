from webui.cli import main

raise SystemExit(main())
