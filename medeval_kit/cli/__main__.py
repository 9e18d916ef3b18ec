import sys

from medeval_kit.cli import main

sys.exit(main())
