#!/usr/bin/env bash
# Mutation testing of the judge's core mechanisms: verdicts, checker, rules, timing statistics and score, store,
# rubric, static scan, limits (pyproject.toml [tool.mutmut] names the modules and the fast unit tests that judge
# them). mutmut copies the package to mutants/, makes each small change (a mutant) in turn and runs the tests that
# reach the changed function; a mutant no test notices "survived". Then tests/mutation/summary.py counts them per
# module, leaves out the ones listed in tests/mutation/equivalent.toml (changes that cannot change behaviour, each
# with its reason) and fails below 90% of the others killed.
#
#   tests/mutation/run.sh            # 2 workers, at nice 15 (the machine is shared); long on 2 cores: the docs
#                                    # ("Mutation testing") say how to run a sample of the mutants
#   tests/mutation/run.sh 4          # more workers where there are cores to spare
#   tests/mutation/run.sh 2 judge.verdicts.x_worst__mutmut_1   # only these mutants (after a first run)
#
# A second run reuses what mutants/ already knows and tests only the mutants of changed functions; delete mutants/
# to start over. `python -m mutmut show NAME` prints a mutant's diff, `python -m mutmut browse` browses them.
set -euo pipefail
cd "$(dirname "$0")/../.."
jobs="${1:-2}"
shift || true
python="${PYTHON:-python}"
# mutmut puts mutants/ first on the import path and removes this tree from it; a PYTHONPATH naming this tree
# would bring the unmutated package back in the tests' subprocesses.
unset PYTHONPATH
nice -n 15 "$python" -m mutmut run --max-children "$jobs" "$@"
"$python" tests/mutation/summary.py
