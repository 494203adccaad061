import sys

from judge.worker.runner import main

sys.exit(main())
