import sys

from judge.untrusted.runner import main

sys.exit(main())
